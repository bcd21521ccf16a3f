import { createLogger, toolkitFileJsonSchema, withLoadedPlugins } from '@tkgate/core';
import type { Command } from './command.js';
import { configFrom } from './context.js';

/** Prints the JSON Schema of toolkit files, with the keys of every configured plugin's endpoint types. */
export const schema: Command = {
  name: 'schema',
  usage: 'schema',
  summary: 'print the JSON Schema (2020-12) of toolkit files, for editors (see docs/toolkits.md)',
  options: {},
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const config = configFrom(values);
    const log = createLogger('error', (line) => process.stderr.write(line + '\n'));
    const document = await withLoadedPlugins(config, log, async (types) => toolkitFileJsonSchema(types));
    process.stdout.write(JSON.stringify(document, null, 2) + '\n');
  },
};

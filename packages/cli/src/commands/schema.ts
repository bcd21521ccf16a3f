import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger, toolkitFileJsonSchema, withLoadedPlugins } from '@tkgate/core';
import type { Command } from './command.js';
import { configFrom } from './context.js';

/**
 * Prints the JSON Schema of toolkit files, with the keys of every configured plugin's endpoint types.
 * The schema does not depend on any database, so the plugins are loaded on a throwaway SQLite file:
 * an editor's machine needs no access to the gateway's database.
 */
export const schema: Command = {
  name: 'schema',
  usage: 'schema',
  summary: 'print the JSON Schema (2020-12) of toolkit files, for editors (see docs/toolkits.md)',
  options: {},
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const config = configFrom(values);
    const log = createLogger('error', (line) => process.stderr.write(line + '\n'));
    const scratch = mkdtempSync(path.join(tmpdir(), 'tkgate-schema-'));
    try {
      const offline = { ...config, db: { ...config.db, client: 'sqlite' as const, filename: path.join(scratch, 'scratch.sqlite'), url: '' } };
      const document = await withLoadedPlugins(offline, log, async (types) => toolkitFileJsonSchema(types));
      process.stdout.write(JSON.stringify(document, null, 2) + '\n');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  },
};

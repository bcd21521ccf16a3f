import { checkToolkitDirectory, createLogger, describeProblem, openApiDocument } from '@tkgate/core';
import type { Command } from './command.js';
import { configFrom } from './context.js';

/** Prints the OpenAPI 3.1 description of every endpoint in the toolkit files (what GET {base}/openapi.json shows an all-powerful caller). */
export const openapi: Command = {
  name: 'openapi',
  usage: 'openapi [--toolkit NAME]',
  summary: "print the OpenAPI 3.1 description of the toolkit files (all endpoints, or one toolkit's)",
  options: { toolkit: { type: 'string' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const config = configFrom(values);
    const log = createLogger('error', (line) => process.stderr.write(line + '\n'));
    const { snapshot, problems } = await checkToolkitDirectory(config.toolkits.dir, config, log);
    for (const problem of problems) process.stderr.write(describeProblem(problem) + '\n');
    if (problems.length > 0) throw new Error(`${problems.length} problem(s) in ${config.toolkits.dir} (tkgate config check lists them)`);
    const toolkit = values.toolkit as string | undefined;
    if (toolkit !== undefined && !snapshot.get(toolkit)?.enabled) throw new Error(`no enabled toolkit named ${toolkit} in ${config.toolkits.dir}`);
    const document = openApiDocument(snapshot, {
      baseUrl: config.server.base_url,
      maxBodyBytes: config.server.max_body_bytes,
      adminPower: config.auth.admin_power,
      oidc: config.auth.oidc.providers.length > 0,
      toolkit,
    });
    process.stdout.write(JSON.stringify(document, null, 2) + '\n');
  },
};

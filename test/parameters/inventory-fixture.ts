import { randomBytes } from 'node:crypto';
import type { Database } from '@tkgate/core';
import { scriptWriter } from '../support/executables.js';
import { tempDir } from '../support/paths.js';

/**
 * The inventory of the parameters suites (docs/toolkits.md, "Choices from another endpoint"): environments for
 * everyone, hosts per owner, a deploy whose host depends on its environment and whose token is secret.
 */
export const PLANTED = `planted-field-${randomBytes(12).toString('hex')}`;
const script = scriptWriter('tkgate-parameters-bin-');
export const seen = tempDir('tkgate-parameters-seen-');
/** The run: keeps its context where the test reads it, and prints it (the token in it masked in the output). */
const deploy = script('deploy', 'printf "%s" "$1" > "$SEEN/$TKGATE_RUN_ID.json"; echo "deploying with $1"; echo "stderr: $1" >&2');
/** The dry run and the sync command print the context too. */
const dry = script('dry', 'echo "would deploy with $1"');
export const now = script('now', 'printf "%s" "$1" > "$SEEN/now.json"; echo "ran with $1"');

const choices = {
  env: { choices_from: { endpoint: 'envs', value: 'name', label: 'title', cache: '30s' } },
  host: { choices_from: { endpoint: 'hosts/list', value: 'name', label: 'title', args: { env: '$payload.env' }, cache: '30s' } },
  token: { type: 'string', secret: true },
};
const deployFilter = { allowed_fields: ['env', 'host', 'token'], required_fields: ['env', 'host'], field_rules: choices };
export const inventory = {
  name: 'inv',
  type: 'app',
  audit: true,
  endpoints: [
    { path: 'envs', method: 'GET', type: 'internal', pseudo_querys: [{ name: 'envs', select: 'envs', columns: ['name', 'title'], order_by: 'name' }] },
    {
      path: 'hosts/list',
      method: 'GET',
      type: 'internal',
      client_filter: { allowed_fields: ['env'], required_fields: ['env'] },
      pseudo_querys: [
        { name: 'hosts', select: 'hosts', columns: ['name', 'title'], where: { owner: '$context.username', env: '$payload.env' }, order_by: 'name' },
      ],
    },
    {
      path: 'deploy',
      method: 'POST',
      type: 'exec',
      run: 'async',
      command: [deploy],
      env: { SEEN: seen },
      client_filter: deployFilter,
      audit_fields: ['env', 'host', 'token'],
      approval: { approvers: { min_power: 50 }, dry_run: [dry] },
    },
    { path: 'now', method: 'POST', type: 'exec', command: [now], env: { SEEN: seen }, client_filter: deployFilter, audit_fields: ['host', 'token'] },
    { path: 'down', method: 'GET', type: 'http', upstream: { url: 'http://127.0.0.1:1/', timeout: '2s' } },
    {
      path: 'broken',
      method: 'POST',
      type: 'internal',
      client_filter: { field_rules: { site: { choices_from: { endpoint: 'down', value: 'name' } } } },
      pseudo_querys: [{ name: 'envs', select: 'envs', columns: ['name'] }],
    },
  ],
};

export async function inventoryTables(db: Database): Promise<void> {
  await db.schema.createTable('envs', (table) => {
    table.string('name', 20).primary();
    table.string('title', 60).notNullable();
  });
  await db.schema.createTable('hosts', (table) => {
    table.increments('id').primary();
    table.string('name', 60).notNullable();
    table.string('title', 60).notNullable();
    table.string('env', 20).notNullable();
    table.string('owner', 60).notNullable();
  });
  await db('envs').insert([
    { name: 'prod', title: 'Production' },
    { name: 'staging', title: 'Staging' },
  ]);
  await db('hosts').insert([
    { name: 'web-1', title: 'Web 1 (prod)', env: 'prod', owner: 'ana' },
    { name: 'web-2', title: 'Web 2 (staging)', env: 'staging', owner: 'ana' },
    { name: 'db-1', title: 'Database 1', env: 'prod', owner: 'bob' },
  ]);
}

import { checkApiKeyRequest, createApiKey, GatewayError, listApiKeys, recordCliChange, revokeApiKey, userIdOf, type FieldProblem } from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { withDatabase } from './context.js';
import { printTable } from './table.js';

/** The CLI's own words for the fields a key request names (api-keys/api-key-request.ts). */
const FLAG_OF: Record<string, string> = { name: '--name', toolkits: '--toolkit', expires_in: '--expires' };

/** A refused request in the CLI's words: each problem under the option that caused it. */
function asUsageError(err: unknown): unknown {
  if (!(err instanceof GatewayError) || err.code !== 'invalid_payload' || !Array.isArray(err.details)) return err;
  const problems = (err.details as FieldProblem[]).map((problem) => `${FLAG_OF[problem.field.split('.')[0]!] ?? problem.field}: ${problem.message}`);
  return new UsageError(problems.join('; '));
}

export const apikeyCreate: Command = {
  name: 'apikey create',
  usage: 'apikey create USER [--name N] [--toolkit T]... [--expires 90d]',
  summary: 'create an API key for USER (scoped to the toolkits named, else all); prints the key once, alone on the first line',
  options: { name: { type: 'string' }, toolkit: { type: 'string', multiple: true }, expires: { type: 'string' } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [username] }) {
    let request;
    try {
      request = checkApiKeyRequest({ name: values.name ?? 'unnamed', toolkits: values.toolkit, expires_in: values.expires });
    } catch (err) {
      throw asUsageError(err);
    }
    const created = await withDatabase(values, async (db, config) => {
      const userId = await userIdOf(db, username!);
      const made = await createApiKey(db, userId, request, config.auth.api_keys_per_user);
      // The audit event names the key by its id, never its text.
      await recordCliChange(db, 'apikey_create', { username, user_id: userId, key_id: made.id, name: made.name, scope: made.scope });
      return made;
    });
    process.stdout.write(`${created.key}\n`);
    const scope = created.scope.length === 0 ? 'all toolkits' : created.scope.join(', ');
    process.stdout.write(`api key ${created.id} created for ${username} (name ${created.name}; scope ${scope}; expires ${created.expires_at ?? 'never'})\n`);
    process.stderr.write('the key above is shown only now: store it (only its SHA-256 is kept)\n');
  },
};

export const apikeyList: Command = {
  name: 'apikey list',
  usage: 'apikey list [USER]',
  summary: "list API keys (every user's, or USER's), never the keys themselves",
  options: {},
  operands: { min: 0, max: 1 },
  async run({ values, operands: [username] }) {
    const keys = await withDatabase(values, async (db) => listApiKeys(db, username === undefined ? undefined : await userIdOf(db, username)));
    printTable([
      ['ID', 'NAME', 'USER', 'SCOPE', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED'],
      ...keys.map((key) => [
        key.id,
        key.name,
        key.username,
        key.scope.length === 0 ? '*' : key.scope.join(','),
        key.created_at,
        key.expires_at ?? '-',
        key.last_used_at ?? '-',
        key.revoked_at ?? '-',
      ]),
    ]);
  },
};

export const apikeyRevoke: Command = {
  name: 'apikey revoke',
  usage: 'apikey revoke ID',
  summary: 'revoke an API key: refused by every running gateway within sessions.cache_ttl',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const revoked = await withDatabase(values, async (db) => {
      const done = await revokeApiKey(db, id!);
      await recordCliChange(db, 'apikey_revoke', { key_id: done.id, user_id: done.user_id });
      return done;
    });
    process.stdout.write(`api key ${revoked.id} revoked (${revoked.revoked_at})\n`);
  },
};

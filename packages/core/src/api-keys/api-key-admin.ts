import type { Knex } from 'knex';
import type { Database } from '../db/connect.js';
import { lockUser, writeTransaction } from '../db/write-transaction.js';
import { coreError, notFound } from '../errors.js';
import { hashApiKey, newApiKey, newApiKeyId } from './api-key.js';
import type { ApiKeyRequest } from './api-key-request.js';

/**
 * Creating, listing and revoking API keys, for the CLI (`tkgate apikey`) and the HTTP routes alike: the one
 * place keys are written. The key text exists only in what `createApiKey` returns; the database gets its
 * SHA-256. Audit events (apikey_create, apikey_revoke) belong right after `createApiKey` and `revokeApiKey`.
 */

export interface CreatedApiKey {
  /** The key itself: shown once, never stored. */
  key: string;
  id: string;
  user_id: number;
  name: string;
  scope: string[];
  created_at: string;
  expires_at: string | null;
}

export interface RevokedApiKey {
  id: string;
  user_id: number;
  /** When it was revoked (now, or the earlier revocation of a key revoked already). */
  revoked_at: string;
  /** For the caller's cache only (forget it at once); never shown or logged. */
  keyHash: string;
}

export interface ApiKeyListing {
  id: string;
  name: string;
  user_id: number;
  username: string;
  scope: string[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

const isoOrNull = (epochMs: unknown): string | null => (epochMs == null ? null : new Date(Number(epochMs)).toISOString());

/** Live: neither revoked nor expired at `now`. */
const liveAt = (now: number) => (query: Knex.QueryBuilder) =>
  query.whereNull('revoked_at').andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now));

/**
 * A new key for a user, holding the user's row (db/write-transaction.ts) so that concurrent creations on any
 * instance never pass `maxPerUser` live keys: 409 too_many_keys past it; 404 user_not_found for no such user.
 */
export async function createApiKey(db: Database, userId: number, request: ApiKeyRequest, maxPerUser: number): Promise<CreatedApiKey> {
  const key = newApiKey();
  const id = newApiKeyId();
  return writeTransaction(db, async (trx) => {
    if (!(await lockUser(trx, userId))) throw notFound('user_not_found', 'no such user');
    const now = Date.now();
    const live = await trx('api_keys').where({ user_id: userId }).modify(liveAt(now)).count({ n: '*' }).first();
    if (Number(live?.n ?? 0) >= maxPerUser)
      throw coreError('too_many_keys', `the user has ${maxPerUser} live API keys already (auth.api_keys_per_user); revoke one first`, {
        details: { max: maxPerUser },
      });
    const expiresAt = request.expiresInMs === undefined ? null : now + request.expiresInMs;
    await trx('api_keys').insert({
      key_hash: hashApiKey(key),
      id,
      user_id: userId,
      name: request.name,
      scope: JSON.stringify(request.scope),
      created_at: now,
      expires_at: expiresAt,
      last_used_at: null,
      revoked_at: null,
    });
    return { key, id, user_id: userId, name: request.name, scope: request.scope, created_at: isoOrNull(now)!, expires_at: isoOrNull(expiresAt) };
  });
}

const KEY_ID = /^[0-9a-f]{16}$/;

/**
 * Revokes a key by id: refused by every instance within sessions.cache_ttl (by the caller's at once, when it
 * forgets `keyHash`). `ownerId` limits it to that user's keys (a caller below auth.admin_power): another
 * user's key is 404 key_not_found, as a key that does not exist. Revoking a revoked key changes nothing.
 */
export async function revokeApiKey(db: Database, id: string, ownerId?: number): Promise<RevokedApiKey> {
  const row = KEY_ID.test(id) ? await db('api_keys').where({ id }).first('key_hash', 'user_id', 'revoked_at') : undefined;
  if (!row || (ownerId !== undefined && Number(row.user_id) !== ownerId)) throw notFound('key_not_found', `no API key with id ${id}`);
  let revokedAt = row.revoked_at == null ? undefined : Number(row.revoked_at);
  if (revokedAt === undefined) {
    const now = Date.now();
    await writeTransaction(db, (trx) => trx('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: now }));
    const stored = await db('api_keys').where({ id }).first('revoked_at');
    revokedAt = Number(stored?.revoked_at ?? now);
  }
  return { id, user_id: Number(row.user_id), revoked_at: isoOrNull(revokedAt)!, keyHash: String(row.key_hash) };
}

/** Every key of one user, or of all users, oldest first; never a key or its hash. */
export async function listApiKeys(db: Database, userId?: number): Promise<ApiKeyListing[]> {
  const query = db('api_keys')
    .join('users', 'users.id', 'api_keys.user_id')
    .orderBy([{ column: 'api_keys.created_at' }, { column: 'api_keys.id' }]);
  if (userId !== undefined) query.where('api_keys.user_id', userId);
  const rows = await query.select(
    'api_keys.id',
    'api_keys.name',
    'api_keys.user_id',
    'users.username',
    'api_keys.scope',
    'api_keys.created_at',
    'api_keys.expires_at',
    'api_keys.last_used_at',
    'api_keys.revoked_at',
  );
  return rows.map((row) => ({
    id: String(row.id),
    name: String(row.name),
    user_id: Number(row.user_id),
    username: String(row.username),
    scope: JSON.parse(String(row.scope)) as string[],
    created_at: isoOrNull(row.created_at)!,
    expires_at: isoOrNull(row.expires_at),
    last_used_at: isoOrNull(row.last_used_at),
    revoked_at: isoOrNull(row.revoked_at),
  }));
}

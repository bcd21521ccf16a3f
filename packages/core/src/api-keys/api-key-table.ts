import type { Database } from '../db/connect.js';
import type { PreparedRead, PreparedReads } from '../db/prepared-reads.js';
import { callerColumns, toCaller } from '../users/user-directory.js';
import { parseScope, type ApiKey, type ApiKeyRead } from './api-key.js';

/**
 * The `api_keys` table on the request path: a key and its owner in one indexed read (the primary key of
 * api_keys, then of users and core_groups), as a session is read (sessions/session-table.ts), and the
 * lagged last-use write. Creating, listing and revoking are in api-key-admin.ts.
 */
export class ApiKeyTable {
  private readonly byHash: PreparedRead;

  constructor(
    private readonly db: Database,
    reads: PreparedReads,
  ) {
    this.byHash = reads.prepare((param) =>
      db('api_keys')
        .join('users', 'users.id', 'api_keys.user_id')
        .leftJoin('core_groups', 'core_groups.id', 'users.core_group_id')
        .where('api_keys.key_hash', param(0))
        .select(
          'api_keys.id as key_id',
          'api_keys.name as key_name',
          'api_keys.scope',
          'api_keys.created_at',
          'api_keys.expires_at',
          'api_keys.last_used_at',
          'api_keys.revoked_at',
          ...callerColumns,
        ),
    );
  }

  async read(keyHash: string): Promise<ApiKeyRead | undefined> {
    const [row] = await this.byHash.all([keyHash]);
    if (!row) return undefined;
    const caller = toCaller(row);
    const key: ApiKey = {
      keyHash,
      id: String(row.key_id),
      userId: caller.id,
      name: String(row.key_name),
      scope: parseScope(String(row.scope)),
      createdAt: Number(row.created_at),
      expiresAt: row.expires_at == null ? null : Number(row.expires_at),
      lastUsedAt: row.last_used_at == null ? null : Number(row.last_used_at),
      revokedAt: row.revoked_at == null ? null : Number(row.revoked_at),
    };
    return { key, caller, credential: { kind: 'api_key', id: key.id } };
  }

  /** Last use: an UPDATE that never moves it back (another instance may have stored a later one). */
  async recordUse(key: ApiKey, usedAt: number): Promise<ApiKey> {
    await this.db('api_keys')
      .where({ key_hash: key.keyHash })
      .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', usedAt))
      .update({ last_used_at: usedAt });
    return { ...key, lastUsedAt: usedAt };
  }
}

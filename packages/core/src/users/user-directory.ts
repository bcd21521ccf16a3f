import type { Database } from '../db/connect.js';
import type { PreparedRead, PreparedReads } from '../db/prepared-reads.js';

/** The caller as every authenticated request sees it: read fresh, so power and group changes apply at once. */
export interface CallerRecord {
  id: number;
  username: string;
  power: number;
  core_group_id: number | null;
  core_group_name: string | null;
  disabled: boolean;
  sessions_revoked_at: number;
}

export interface LoginRecord {
  id: number;
  username: string;
  password_hash: string;
  power: number;
  disabled: boolean;
}

/** The caller's columns, as one read selects them with its session (sessions/session-table.ts) or alone. */
export const callerColumns = [
  'users.id',
  'users.username',
  'users.power',
  'users.core_group_id',
  'core_groups.name as core_group_name',
  'users.disabled',
  'users.sessions_revoked_at',
];

export function toCaller(row: Record<string, unknown>): CallerRecord {
  return {
    id: Number(row.id),
    username: String(row.username),
    power: Number(row.power),
    core_group_id: row.core_group_id == null ? null : Number(row.core_group_id),
    core_group_name: row.core_group_name == null ? null : String(row.core_group_name),
    disabled: Boolean(row.disabled),
    sessions_revoked_at: Number(row.sessions_revoked_at),
  };
}

export class UserDirectory {
  /** Every authenticated request reads its caller: prepared once, kept until the database changes. */
  private readonly callerById: PreparedRead;

  constructor(
    private readonly db: Database,
    reads: PreparedReads,
  ) {
    this.callerById = reads.prepare(
      (param) => db('users').leftJoin('core_groups', 'core_groups.id', 'users.core_group_id').where('users.id', param(0)).first(callerColumns),
      { cached: true },
    );
  }

  async findCaller(userId: number): Promise<CallerRecord | undefined> {
    const [row] = await this.callerById.all([userId]);
    return row ? toCaller(row) : undefined;
  }

  async findByUsername(username: string): Promise<CallerRecord | undefined> {
    const row = await this.db('users').leftJoin('core_groups', 'core_groups.id', 'users.core_group_id').where('users.username', username).first(callerColumns);
    return row && row.username === username ? toCaller(row) : undefined;
  }

  async findForLogin(username: string): Promise<LoginRecord | undefined> {
    const row = await this.db('users').where({ username }).first('id', 'username', 'password_hash', 'power', 'disabled');
    // Byte for byte, whatever the column's collation (a PAD SPACE one finds "alice" for "alice   ").
    if (!row || row.username !== username) return undefined;
    return {
      id: Number(row.id),
      username: String(row.username),
      password_hash: String(row.password_hash),
      power: Number(row.power),
      disabled: Boolean(row.disabled),
    };
  }
}

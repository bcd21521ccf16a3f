import type { Database } from '../db/connect.js';
import { OrderedWriter } from './ordered-writer.js';
import { expiresAt, type Session, type SessionPolicy } from './session.js';

function toSession(row: Record<string, unknown>): Session {
  return {
    tokenHash: String(row.token_hash),
    userId: Number(row.user_id),
    createdAt: Number(row.created_at),
    loginSeq: Number(row.login_seq),
    lastUsedAt: Number(row.last_used_at),
    persistedLastUsedAt: Number(row.last_used_at),
  };
}

/** The `sessions` table: token hashes only, never a token. All writes go through one OrderedWriter. */
export class SessionPersistence {
  private readonly writer = new OrderedWriter();

  constructor(
    private readonly db: Database,
    private readonly policy: SessionPolicy,
  ) {}

  /**
   * Every stored session that has not expired, oldest first. Read in pages so a large table does not
   * hold all its rows in memory twice (rows, then sessions) while loading.
   */
  async loadLive(now: number, pageSize = 5000): Promise<Session[]> {
    await this.db('sessions').where('expires_at', '<=', now).delete();
    const sessions: Session[] = [];
    let after: { created_at: number; login_seq: number } | undefined;
    for (;;) {
      const query = this.db('sessions')
        .select('token_hash', 'user_id', 'created_at', 'last_used_at', 'login_seq')
        .orderBy([{ column: 'created_at' }, { column: 'login_seq' }])
        .limit(pageSize);
      if (after) {
        const { created_at, login_seq } = after;
        query.where((page) => page.where('created_at', '>', created_at).orWhere((tie) => tie.where({ created_at }).andWhere('login_seq', '>', login_seq)));
      }
      const rows = await query;
      for (const row of rows) sessions.push(toSession(row));
      if (rows.length < pageSize) return sessions;
      const last = rows[rows.length - 1]!;
      after = { created_at: Number(last.created_at), login_seq: Number(last.login_seq) };
    }
  }

  /** A login: the new row and the evictions it caused, in one transaction. */
  insert(session: Session, evicted: Session[]): Promise<void> {
    return this.writer.run(() =>
      this.db.transaction(async (trx) => {
        if (evicted.length > 0) await trx('sessions').whereIn('token_hash', evicted.map((s) => s.tokenHash)).delete();
        await trx('sessions').insert(this.row(session));
      }),
    );
  }

  /** Last use: an UPDATE only, so a session deleted meanwhile is never written back. */
  recordUse(session: Session): Promise<void> {
    const lastUsedAt = session.lastUsedAt;
    return this.writer.run(async () => {
      await this.db('sessions')
        .where('token_hash', session.tokenHash)
        .update({ last_used_at: lastUsedAt, expires_at: expiresAt(session, this.policy) });
    });
  }

  delete(sessions: Session[]): Promise<void> {
    if (sessions.length === 0) return Promise.resolve();
    return this.writer.run(async () => {
      for (let i = 0; i < sessions.length; i += 500) {
        const hashes = sessions.slice(i, i + 500).map((s) => s.tokenHash);
        await this.db('sessions').whereIn('token_hash', hashes).delete();
      }
    });
  }

  drain(): Promise<void> {
    return this.writer.drain();
  }

  private row(session: Session) {
    return {
      token_hash: session.tokenHash,
      user_id: session.userId,
      created_at: session.createdAt,
      last_used_at: session.lastUsedAt,
      expires_at: expiresAt(session, this.policy),
      login_seq: session.loginSeq,
    };
  }
}

import type { Credential } from './credential.js';
import type { Database } from '../db/connect.js';
import type { PreparedRead, PreparedReads } from '../db/prepared-reads.js';
import { lockUser, writeTransaction } from '../db/write-transaction.js';
import { callerColumns, toCaller, type CallerRecord } from '../users/user-directory.js';
import { expiryOf, hashPrefix, type OidcSessionFacts, type Session, type SessionPolicy } from './session.js';

/** A session and its user, as one authenticated request needs them. */
export interface SessionRead {
  session: Session;
  caller: CallerRecord;
  /** `session` and the first 8 hex of the token hash, made with the read (not per request). */
  credential: Credential;
}

export interface LoginWrite {
  session: Session;
  evicted: string[];
}

const DELETE_CHUNK = 500;

/**
 * The `sessions` table, the one authority on sessions for every gateway on the database. Token hashes
 * only, never a token. Writes lock rows by primary key in ascending order (see db/write-transaction.ts).
 */
export class SessionTable {
  private readonly byHash: PreparedRead;

  constructor(
    private readonly db: Database,
    reads: PreparedReads,
    private readonly policy: SessionPolicy,
  ) {
    // The session and its caller in one indexed query: the primary key of sessions, then of users and core_groups.
    this.byHash = reads.prepare((param) =>
      db('sessions')
        .join('users', 'users.id', 'sessions.user_id')
        .leftJoin('core_groups', 'core_groups.id', 'users.core_group_id')
        .where('sessions.token_hash', param(0))
        .select('sessions.created_at', 'sessions.last_used_at', 'sessions.expires_at', 'sessions.oidc_provider', ...callerColumns),
    );
  }

  async read(tokenHash: string): Promise<SessionRead | undefined> {
    const [row] = await this.byHash.all([tokenHash]);
    if (!row) return undefined;
    const caller = toCaller(row);
    const session = {
      tokenHash,
      userId: caller.id,
      createdAt: Number(row.created_at),
      lastUsedAt: Number(row.last_used_at),
      expiresAt: Number(row.expires_at),
      ...(row.oidc_provider == null ? {} : { provider: String(row.oidc_provider) }),
    };
    return { session, caller, credential: { kind: 'session', id: hashPrefix(tokenHash) } };
  }

  /**
   * Which of these token hashes are still live sessions of users let in (not disabled, not revoked since), in
   * one query per 500: the check of the open streams' credentials (stream-ends.ts).
   */
  async liveOf(tokenHashes: readonly string[], now: number): Promise<Set<string>> {
    const live = new Set<string>();
    for (let start = 0; start < tokenHashes.length; start += DELETE_CHUNK) {
      const rows = await this.db('sessions')
        .join('users', 'users.id', 'sessions.user_id')
        .whereIn('sessions.token_hash', tokenHashes.slice(start, start + DELETE_CHUNK))
        .select('sessions.token_hash', 'sessions.created_at', 'sessions.expires_at', 'users.disabled', 'users.sessions_revoked_at');
      for (const row of rows) {
        const createdAt = Number(row.created_at);
        if (!row.disabled && Number(row.sessions_revoked_at) < createdAt && Number(row.expires_at) > now) live.add(String(row.token_hash));
      }
    }
    return live;
  }

  /**
   * A login, in one transaction that holds the user's row: the user's live sessions beyond the maximum
   * (oldest first, by creation time, then by the per-user sequence the database hands out under that
   * lock) are deleted and the new one inserted. Undefined when the user no longer exists.
   */
  login(tokenHash: string, userId: number, oidc?: OidcSessionFacts): Promise<LoginWrite | undefined> {
    return writeTransaction(this.db, async (trx) => {
      if (!(await lockUser(trx, userId))) return undefined;
      const now = Date.now();
      const rows = await trx('sessions')
        .where({ user_id: userId })
        .orderBy([{ column: 'created_at' }, { column: 'login_seq' }])
        .select('token_hash', 'expires_at', 'login_seq');
      const loginSeq = rows.reduce((max, row) => Math.max(max, Number(row.login_seq)), 0) + 1;
      const live = rows.filter((row) => Number(row.expires_at) > now);
      const evicted = live.slice(0, Math.max(0, live.length - (this.policy.maxPerUser - 1))).map((row) => String(row.token_hash));
      if (evicted.length > 0)
        await trx('sessions')
          .whereIn('token_hash', [...evicted].sort())
          .delete();
      const session: Session = {
        tokenHash,
        userId,
        createdAt: now,
        lastUsedAt: now,
        expiresAt: expiryOf(this.policy, now, now),
        ...(oidc ? { provider: oidc.provider } : {}),
      };
      await trx('sessions').insert({
        token_hash: tokenHash,
        user_id: userId,
        created_at: now,
        last_used_at: now,
        expires_at: session.expiresAt,
        login_seq: loginSeq,
        ...(oidc ? { oidc_provider: oidc.provider, oidc_subject: oidc.subject, oidc_sid: oidc.sid, oidc_end_session_url: oidc.endSessionUrl } : {}),
      });
      return { session, evicted };
    });
  }

  /** Last use: an UPDATE only (a session deleted meanwhile stays deleted) that never moves it back. */
  async recordUse(session: Session, usedAt: number): Promise<Session> {
    const expiresAt = expiryOf(this.policy, session.createdAt, usedAt);
    await this.db('sessions')
      .where({ token_hash: session.tokenHash })
      .andWhere('last_used_at', '<', usedAt)
      .update({ last_used_at: usedAt, expires_at: expiresAt });
    return { ...session, lastUsedAt: usedAt, expiresAt };
  }

  /** Deletes one session; resolves once committed. */
  async delete(tokenHash: string): Promise<void> {
    await writeTransaction(this.db, (trx) => trx('sessions').where({ token_hash: tokenHash }).delete());
  }

  /** The provider's end-session URL of an OIDC session (RP-initiated logout), if any. */
  async endSessionUrlOf(tokenHash: string): Promise<string | undefined> {
    const row = await this.db('sessions').where({ token_hash: tokenHash }).first('oidc_end_session_url');
    return row?.oidc_end_session_url == null ? undefined : String(row.oidc_end_session_url);
  }

  /**
   * Deletes the sessions a back-channel logout names: those of the IdP session `sid`, or every session of the
   * user `sub` (with both, a session that recorded no sid ends by its sub). Returns the token hashes.
   */
  deleteOidc(provider: string, ended: { sid?: string | undefined; sub?: string | undefined }): Promise<string[]> {
    return writeTransaction(this.db, async (trx) => {
      const query = trx('sessions').where({ oidc_provider: provider });
      if (ended.sid !== undefined && ended.sub !== undefined)
        query.andWhere((q) => q.where({ oidc_sid: ended.sid }).orWhere((both) => both.whereNull('oidc_sid').andWhere({ oidc_subject: ended.sub })));
      else if (ended.sid !== undefined) query.andWhere({ oidc_sid: ended.sid });
      else query.andWhere({ oidc_subject: ended.sub });
      const hashes = (await query.pluck('token_hash')).map(String).sort();
      for (let i = 0; i < hashes.length; i += DELETE_CHUNK) {
        await trx('sessions')
          .whereIn('token_hash', hashes.slice(i, i + DELETE_CHUNK))
          .delete();
      }
      return hashes;
    });
  }

  /** Deletes every session of a user, holding the user's row so that no login of theirs interleaves. */
  deleteAllOf(userId: number): Promise<string[]> {
    return writeTransaction(this.db, async (trx) => {
      await lockUser(trx, userId);
      const hashes = (await trx('sessions').where({ user_id: userId }).pluck('token_hash')).map(String).sort();
      for (let i = 0; i < hashes.length; i += DELETE_CHUNK) {
        await trx('sessions')
          .whereIn('token_hash', hashes.slice(i, i + DELETE_CHUNK))
          .delete();
      }
      return hashes;
    });
  }

  /**
   * Deletes sessions whose stored expiry has passed, in small batches. The delete checks the expiry again,
   * so a last use stored by another instance meanwhile keeps its session.
   */
  async purgeExpired(now: number): Promise<number> {
    let purged = 0;
    for (;;) {
      const hashes = (await this.db('sessions').where('expires_at', '<=', now).limit(DELETE_CHUNK).pluck('token_hash')).map(String).sort();
      if (hashes.length === 0) return purged;
      purged += await writeTransaction(this.db, (trx) => trx('sessions').whereIn('token_hash', hashes).andWhere('expires_at', '<=', now).delete());
      if (hashes.length < DELETE_CHUNK) return purged;
    }
  }
}

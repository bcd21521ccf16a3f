import { describeDatabaseError, unavailableWhenRefused } from '../db/database-errors.js';
import type { Logger } from '../log.js';
import { hashPrefix, type OidcSessionFacts, type Session, type SessionPolicy } from './session.js';
import type { SessionCache } from './session-cache.js';
import type { SessionRead, SessionTable } from './session-table.js';
import { hashToken, newToken } from './token.js';

/**
 * Sessions for one gateway process. The database is the authority (any number of gateways share it);
 * this process keeps only a cache of what it read, trusted as long as SessionCache says, and forgets at
 * once what it ends itself. Ending a session answers only once the database has committed it; when the
 * database refuses, nothing changed and the caller gets 503 `unavailable` to retry.
 */
export class SessionStore {
  /** Last-use writes in flight, so a burst of requests writes once. */
  private readonly touching = new Set<string>();

  constructor(
    readonly policy: SessionPolicy,
    private readonly table: SessionTable,
    private readonly cache: SessionCache,
    private readonly log: Logger,
  ) {}

  /** A login: durable (and the user's oldest sessions beyond the maximum gone) before the token is returned. */
  async create(userId: number, oidc?: OidcSessionFacts): Promise<{ token: string; session: Session } | undefined> {
    const token = newToken();
    const written = await this.table.login(hashToken(token), userId, oidc);
    if (!written) return undefined;
    this.cache.forget(written.evicted);
    return { token, session: written.session };
  }

  /**
   * The live session of a token hash and its user when the cache has it and may be trusted: answered
   * without waiting, as most requests are; undefined means ask `find`.
   */
  cached(tokenHash: string, now = Date.now()): SessionRead | undefined {
    const read = this.cache.get(tokenHash, now);
    return read && read.session.expiresAt > now ? read : undefined;
  }

  /** The live session of a token hash and its user, from the cache while it may be trusted. */
  async find(tokenHash: string, now = Date.now()): Promise<SessionRead | undefined> {
    let read = this.cache.get(tokenHash, now);
    if (!read) {
      const stamp = this.cache.stamp(now);
      read = await this.table.read(tokenHash);
      if (!read) return undefined;
      this.cache.set(tokenHash, read, stamp);
    }
    return read.session.expiresAt > now ? read : undefined;
  }

  /** Which of these token hashes are live sessions now, read from the database (not the cache). */
  liveOf(tokenHashes: readonly string[], now = Date.now()): Promise<Set<string>> {
    return this.table.liveOf(tokenHashes, now);
  }

  /**
   * Counts a request as use. The database hears of it once the stored last use lags by a tenth of the
   * idle timeout; that write is not awaited, and its failure is logged, never the request's.
   */
  touch(read: SessionRead, now = Date.now()): void {
    const { session } = read;
    if (now - session.lastUsedAt < this.policy.idleTimeoutMs / 10 || this.touching.has(session.tokenHash)) return;
    this.touching.add(session.tokenHash);
    this.table
      .recordUse(session, now)
      .then((updated) => this.cache.update(session.tokenHash, { ...read, session: updated }))
      .catch((err) => this.log.error('session last-use not written', { session: hashPrefix(session.tokenHash), ...describeDatabaseError(err) }))
      .finally(() => this.touching.delete(session.tokenHash));
  }

  async end(session: Session): Promise<void> {
    await unavailableWhenRefused('session not ended', () => this.table.delete(session.tokenHash), { session: hashPrefix(session.tokenHash) });
    this.cache.forget([session.tokenHash]);
  }

  /** Ends every session of a user; returns how many there were. */
  async endAllOf(userId: number): Promise<number> {
    const ended = await unavailableWhenRefused('sessions not cleared', () => this.table.deleteAllOf(userId), { user_id: userId });
    this.cache.forget(ended);
    return ended.length;
  }

  /** Ends the sessions a provider's back-channel logout names (its IdP session or its user); returns how many. */
  async endOidc(provider: string, ended: { sid?: string | undefined; sub?: string | undefined }): Promise<number> {
    const hashes = await unavailableWhenRefused('sessions not ended', () => this.table.deleteOidc(provider, ended), { provider });
    this.cache.forget(hashes);
    return hashes.length;
  }

  /** The provider's end-session URL of an OIDC session (RP-initiated logout), if any. */
  endSessionUrlOf(session: Session): Promise<string | undefined> {
    return this.table.endSessionUrlOf(session.tokenHash);
  }

  /** Deletes the sessions whose stored expiry has passed; run periodically by every instance. */
  purgeExpired(now = Date.now()): Promise<number> {
    return this.table.purgeExpired(now);
  }

  /** Waits (at most 5 s) for the last-use writes in flight (shutdown). */
  async flush(): Promise<void> {
    const until = Date.now() + 5_000;
    while (this.touching.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

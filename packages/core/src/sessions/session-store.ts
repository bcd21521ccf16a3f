import type { Logger } from '../log.js';
import { byCreation, expiresAt, type Session, type SessionPolicy } from './session.js';
import type { SessionPersistence } from './session-persistence.js';
import { hashToken, newToken } from './token.js';

/**
 * Live sessions, in memory: the single source of truth of one gateway process. Every change is made
 * synchronously here first, then replayed in order to the database when persistence is on.
 */
export class SessionStore {
  private readonly byHash = new Map<string, Session>();
  /** Each user's sessions in creation order, oldest first. */
  private readonly byUser = new Map<number, Session[]>();
  private nextLoginSeq = 1;

  constructor(
    readonly policy: SessionPolicy,
    private readonly persistence: SessionPersistence | undefined,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.byHash.size;
  }

  /** Loads persisted sessions back (restart, or after `kill -9`). */
  async load(now = Date.now()): Promise<number> {
    if (!this.persistence) return 0;
    const sessions = await this.persistence.loadLive(now);
    for (const session of sessions) {
      if (expiresAt(session, this.policy) <= now) continue;
      this.add(session);
      this.nextLoginSeq = Math.max(this.nextLoginSeq, session.loginSeq + 1);
    }
    const evicted: Session[] = [];
    for (const userId of this.byUser.keys()) evicted.push(...this.evictBeyond(userId, this.policy.maxPerUser));
    await this.persistence.delete(evicted);
    return this.byHash.size;
  }

  /**
   * A login. The new session and the evictions it causes happen in one synchronous step, so concurrent
   * logins of one user can never leave more than the maximum; the caller gets the token once it is durable.
   */
  async create(userId: number, now = Date.now()): Promise<{ token: string; session: Session }> {
    const token = newToken();
    const session: Session = {
      tokenHash: hashToken(token),
      userId,
      createdAt: now,
      loginSeq: this.nextLoginSeq++,
      lastUsedAt: now,
      persistedLastUsedAt: now,
    };
    const evicted = this.evictBeyond(userId, this.policy.maxPerUser - 1);
    this.add(session);
    if (this.persistence) {
      try {
        await this.persistence.insert(session, evicted);
      } catch (err) {
        this.remove(session);
        this.persistence.delete(evicted).catch((cause) => this.log.error('session eviction not written', { err: cause }));
        throw err;
      }
    }
    return { token, session };
  }

  /** The live session of a token hash; an expired one is ended on the way. */
  find(tokenHash: string, now = Date.now()): Session | undefined {
    const session = this.byHash.get(tokenHash);
    if (!session) return undefined;
    if (expiresAt(session, this.policy) <= now) {
      void this.end(session).catch((err) => this.log.error('expired session not deleted', { err }));
      return undefined;
    }
    return session;
  }

  /**
   * Counts a request as use. The database hears of it only once the stored time lags by a tenth of the
   * idle timeout; that write is not awaited, and its failure is logged, never the request's.
   */
  touch(session: Session, now = Date.now()): void {
    if (this.byHash.get(session.tokenHash) !== session) return;
    session.lastUsedAt = Math.max(session.lastUsedAt, now);
    if (!this.persistence || session.lastUsedAt - session.persistedLastUsedAt < this.policy.idleTimeoutMs / 10) return;
    session.persistedLastUsedAt = session.lastUsedAt;
    this.persistence.recordUse(session).catch((err) => this.log.error('session last-use not written', { err }));
  }

  async end(session: Session): Promise<void> {
    if (!this.remove(session)) return;
    await this.persistence?.delete([session]);
  }

  /** Ends every session of a user; returns how many there were. */
  async endAllOf(userId: number): Promise<number> {
    const sessions = [...(this.byUser.get(userId) ?? [])];
    for (const session of sessions) this.remove(session);
    await this.persistence?.delete(sessions);
    return sessions.length;
  }

  /** Drops expired sessions from memory and the database; run periodically. */
  async sweep(now = Date.now()): Promise<number> {
    const expired: Session[] = [];
    for (const session of this.byHash.values()) {
      if (expiresAt(session, this.policy) <= now) expired.push(session);
    }
    for (const session of expired) this.remove(session);
    await this.persistence?.delete(expired);
    return expired.length;
  }

  /** Waits for every pending database write (shutdown). */
  async flush(): Promise<void> {
    await this.persistence?.drain();
  }

  expiresAt(session: Session): number {
    return expiresAt(session, this.policy);
  }

  private add(session: Session): void {
    this.byHash.set(session.tokenHash, session);
    const own = this.byUser.get(session.userId);
    if (!own) {
      this.byUser.set(session.userId, [session]);
    } else {
      own.push(session);
      if (own.length > 1 && byCreation(own[own.length - 2]!, session) > 0) own.sort(byCreation);
    }
  }

  private remove(session: Session): boolean {
    if (this.byHash.get(session.tokenHash) !== session) return false;
    this.byHash.delete(session.tokenHash);
    const own = this.byUser.get(session.userId);
    if (own) {
      const index = own.indexOf(session);
      if (index >= 0) own.splice(index, 1);
      if (own.length === 0) this.byUser.delete(session.userId);
    }
    return true;
  }

  /** Removes the user's oldest sessions until at most `keep` remain; returns them. */
  private evictBeyond(userId: number, keep: number): Session[] {
    const own = this.byUser.get(userId);
    if (!own || own.length <= keep) return [];
    const evicted = own.slice(0, own.length - keep);
    for (const session of evicted) this.remove(session);
    return evicted;
  }
}

/** One live session, in memory. Times are epoch milliseconds. */
export interface Session {
  readonly tokenHash: string;
  readonly userId: number;
  readonly createdAt: number;
  /** Orders logins of the same millisecond, so eviction is exactly oldest-first. */
  readonly loginSeq: number;
  lastUsedAt: number;
  /** The last-use time the database holds; it may lag lastUsedAt by a tenth of the idle timeout. */
  persistedLastUsedAt: number;
}

export interface SessionPolicy {
  idleTimeoutMs: number;
  absoluteLifetimeMs: number;
  maxPerUser: number;
}

export function expiresAt(session: Session, policy: SessionPolicy): number {
  return Math.min(session.lastUsedAt + policy.idleTimeoutMs, session.createdAt + policy.absoluteLifetimeMs);
}

/** Creation order: older first; same millisecond falls back to the login sequence. */
export function byCreation(a: Session, b: Session): number {
  return a.createdAt - b.createdAt || a.loginSeq - b.loginSeq;
}

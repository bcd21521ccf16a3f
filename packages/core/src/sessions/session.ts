/** One session as the database holds it. Times are epoch milliseconds. */
export interface Session {
  readonly tokenHash: string;
  readonly userId: number;
  readonly createdAt: number;
  /** The last use stored (it may lag the real last use by a tenth of the idle timeout). */
  readonly lastUsedAt: number;
  /** The stored expiry: the earlier of last use + idle timeout and creation + absolute lifetime. */
  readonly expiresAt: number;
  /** The OIDC provider that signed this session's user in; absent for a password login. */
  readonly provider?: string;
}

/** What a session signed in through an OIDC provider remembers, for back-channel and RP-initiated logout. */
export interface OidcSessionFacts {
  provider: string;
  subject: string;
  sid: string | null;
  /** Where RP-initiated logout sends the browser (with id_token_hint), when the provider has an end_session_endpoint. */
  endSessionUrl: string | null;
}

export interface SessionPolicy {
  idleTimeoutMs: number;
  absoluteLifetimeMs: number;
  maxPerUser: number;
  /** How long this process may trust what it read about a session and its user (0: not at all). */
  cacheTtlMs: number;
}

export function expiryOf(policy: SessionPolicy, createdAt: number, lastUsedAt: number): number {
  return Math.min(lastUsedAt + policy.idleTimeoutMs, createdAt + policy.absoluteLifetimeMs);
}

/** The first characters of a token hash: enough to follow a session through the log, never enough to use it. */
export const hashPrefix = (tokenHash: string): string => tokenHash.slice(0, 8);

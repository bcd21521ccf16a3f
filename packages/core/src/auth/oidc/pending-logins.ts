import { hash } from 'node:crypto';
import type { Database } from '../../db/connect.js';
import { takeOnce } from './take-once.js';

/** A login sent to a provider, waiting for its callback (any instance may receive it). */
export interface PendingLogin {
  provider: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
}

/** How long a user may spend at the provider's login page. */
export const PENDING_LOGIN_MS = 10 * 60_000;

const stateHash = (state: string): string => hash('sha256', state, 'hex');

/**
 * Pending logins in the database, by the SHA-256 of their `state` (never the state itself). Taking one deletes
 * it: of two callbacks with one state, only the one whose delete removed the row goes on.
 */
export class PendingLogins {
  constructor(private readonly db: Database) {}

  async add(state: string, login: PendingLogin, now = Date.now()): Promise<void> {
    await this.db('oidc_pending_logins').insert({
      state_hash: stateHash(state),
      provider: login.provider,
      nonce: login.nonce,
      code_verifier: login.codeVerifier,
      return_to: login.returnTo,
      expires_at: now + PENDING_LOGIN_MS,
    });
  }

  /** The pending login of a state, once: undefined when unknown, already taken or expired. */
  async take(state: string, now = Date.now()): Promise<PendingLogin | undefined> {
    const row = await takeOnce(this.db, 'oidc_pending_logins', { state_hash: stateHash(state) }, now);
    if (!row) return undefined;
    return { provider: String(row.provider), nonce: String(row.nonce), codeVerifier: String(row.code_verifier), returnTo: String(row.return_to) };
  }

  /** Forgets pending logins nobody came back for. */
  purgeExpired(now = Date.now()): Promise<number> {
    return this.db('oidc_pending_logins').where('expires_at', '<=', now).delete();
  }
}

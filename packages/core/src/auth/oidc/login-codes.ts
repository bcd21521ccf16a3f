import { hash, randomBytes } from 'node:crypto';
import type { Database } from '../../db/connect.js';
import { takeOnce } from './take-once.js';

/** A signed-in user waiting for the front end to exchange the login_code for a session. */
export interface SignedIn {
  userId: number;
  provider: string;
  subject: string;
  sid: string | null;
  endSessionUrl: string | null;
}

/** A login_code lives this long: the browser only has to read its fragment and post it. */
export const LOGIN_CODE_MS = 60_000;

/**
 * A code is stored by the SHA-256 of itself and its browser's secret (browser-binding.ts): the row is found only
 * with both, the code from the page's fragment and the secret from the cookie of the browser it was issued to.
 */
const codeHash = (code: string, binding: string): string => hash('sha256', `${code}.${binding}`, 'hex');

/** One-time login codes, stored as SHA-256 only; taking one deletes it, so it is exchanged at most once. */
export class LoginCodes {
  constructor(private readonly db: Database) {}

  /** A new code for a signed-in user, bound to `binding` (the browser's secret): 32 random bytes, base64url. */
  async issue(signedIn: SignedIn, binding: string, now = Date.now()): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    // Codes nobody exchanged are forgotten as new ones are issued.
    await this.db('oidc_login_codes').where('expires_at', '<=', now).delete();
    await this.db('oidc_login_codes').insert({
      code_hash: codeHash(code, binding),
      user_id: signedIn.userId,
      provider: signedIn.provider,
      subject: signedIn.subject,
      sid: signedIn.sid,
      end_session_url: signedIn.endSessionUrl,
      expires_at: now + LOGIN_CODE_MS,
    });
    return code;
  }

  /** What a code stands for, once: undefined when unknown, already exchanged, expired or bound to another secret. */
  async take(code: string, binding: string, now = Date.now()): Promise<SignedIn | undefined> {
    const row = await takeOnce(this.db, 'oidc_login_codes', { code_hash: codeHash(code, binding) }, now);
    if (!row) return undefined;
    return {
      userId: Number(row.user_id),
      provider: String(row.provider),
      subject: String(row.subject),
      sid: row.sid == null ? null : String(row.sid),
      endSessionUrl: row.end_session_url == null ? null : String(row.end_session_url),
    };
  }
}

import { hash } from 'node:crypto';
import type { Database } from '../../db/connect.js';
import { isUniqueViolation } from '../../db/database-errors.js';

/**
 * The `jti` of every back-channel logout token accepted, kept while the token could still pass the freshness
 * check, so a replay is refused by every instance: the insert of a known jti fails on the primary key.
 */
export class LogoutTokens {
  constructor(private readonly db: Database) {}

  /** Records a jti; false when it was seen before. */
  async firstSight(provider: string, jti: string, keepUntil: number, now = Date.now()): Promise<boolean> {
    await this.db('oidc_logout_tokens').where('expires_at', '<=', now).delete();
    try {
      await this.db('oidc_logout_tokens').insert({ jti_hash: hash('sha256', `${provider}\n${jti}`, 'hex'), expires_at: keepUntil });
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }
}

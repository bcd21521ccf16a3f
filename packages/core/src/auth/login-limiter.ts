import { hash } from 'node:crypto';
import type { Database } from '../db/connect.js';
import { writeTransaction } from '../db/write-transaction.js';

/**
 * Failed logins per key (username + client address) within a sliding window, in the database: one limit
 * for every gateway on it and every concurrent request. An attempt is reserved before its password is
 * hashed and counts as a failure unless the login succeeds, so a burst checks at most `maxFailures`
 * passwords however many arrive at once. Keys are stored as SHA-256 hashes (no usernames in the table).
 */
export class LoginLimiter {
  constructor(
    private readonly db: Database,
    private readonly maxFailures: number,
    private readonly windowMs: number,
  ) {}

  static key(username: string, clientAddress: string): string {
    return hash('sha256', `${username}\u0000${clientAddress}`, 'hex');
  }

  /**
   * Reserves an attempt for the key: 0 when it may go ahead, else the seconds until it may try again.
   * One transaction holding the key's row (its upsert comes first, which locks it on every database).
   */
  reserve(key: string): Promise<number> {
    return writeTransaction(this.db, async (trx) => {
      await trx('login_failures').insert({ key_hash: key, attempts: '', last_at: 0 }).onConflict('key_hash').merge(['key_hash']);
      const row = await trx('login_failures').where({ key_hash: key }).first('attempts');
      const now = Date.now();
      const recent = parseAttempts(row?.attempts).filter((at) => at > now - this.windowMs);
      if (recent.length >= this.maxFailures) {
        const freeAt = recent[recent.length - this.maxFailures]! + this.windowMs;
        return Math.max(1, Math.ceil((freeAt - now) / 1000));
      }
      recent.push(now);
      await trx('login_failures')
        .where({ key_hash: key })
        .update({ attempts: recent.slice(-this.maxFailures).join(','), last_at: now });
      return 0;
    });
  }

  /** A successful login forgets the key's failures. */
  async reset(key: string): Promise<void> {
    await this.db('login_failures').where({ key_hash: key }).delete();
  }

  /** Deletes keys whose every attempt has left the window. */
  async sweep(now = Date.now()): Promise<void> {
    await this.db('login_failures')
      .where('last_at', '<=', now - this.windowMs)
      .delete();
  }
}

function parseAttempts(stored: unknown): number[] {
  if (typeof stored !== 'string' || stored === '') return [];
  return stored.split(',').map(Number).filter(Number.isFinite);
}

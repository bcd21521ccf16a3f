import { describeDatabaseError } from '../db/database-errors.js';
import type { Logger } from '../log.js';
import type { SessionCache } from '../sessions/session-cache.js';
import { keyAdmits, type ApiKeyRead } from './api-key.js';
import type { ApiKeyTable } from './api-key-table.js';

/**
 * API keys for one gateway process, checked as sessions are (sessions/session-store.ts): the database is
 * the authority, this process keeps what it read for as long as the session cache's freshness allows
 * (`sessions.cache_ttl`, or until any commit on SQLite), so a revocation, an expiry or the owner's
 * disabling anywhere is refused everywhere within it; what this process revokes it forgets at once.
 */
export class ApiKeyStore {
  /** Last-use writes in flight, so a burst of requests writes once. */
  private readonly touching = new Set<string>();

  constructor(
    private readonly table: ApiKeyTable,
    private readonly cache: SessionCache<ApiKeyRead>,
    /** How far the stored last use may lag: a tenth of sessions.idle_timeout, as for sessions. */
    private readonly useLagMs: number,
    private readonly log: Logger,
  ) {}

  /** The key of a hash and its owner when the cache has them and may be trusted; undefined means ask `find`. */
  cached(keyHash: string, now = Date.now()): ApiKeyRead | undefined {
    return this.cache.get(keyHash, now);
  }

  find(keyHash: string, now = Date.now()): Promise<ApiKeyRead | undefined> {
    return this.cache.through(keyHash, now, () => this.table.read(keyHash));
  }

  /** Which of these key hashes are live keys of users let in now, read from the database (not the cache). */
  async liveOf(keyHashes: readonly string[], now = Date.now()): Promise<Set<string>> {
    const reads = await Promise.all(keyHashes.map((hash) => this.table.read(hash)));
    return new Set(keyHashes.filter((_, index) => keyAdmits(reads[index], now)));
  }

  /** Counts a request as use; the database hears of it once the stored last use lags by `useLagMs`, not awaited. */
  touch(read: ApiKeyRead, now = Date.now()): void {
    const { key } = read;
    if ((key.lastUsedAt !== null && now - key.lastUsedAt < this.useLagMs) || this.touching.has(key.keyHash)) return;
    this.touching.add(key.keyHash);
    this.table
      .recordUse(key, now)
      .then((updated) => this.cache.update(key.keyHash, { ...read, key: updated }))
      .catch((err) => this.log.error('api key last-use not written', { key_id: key.id, ...describeDatabaseError(err) }))
      .finally(() => this.touching.delete(key.keyHash));
  }

  /** A key this process revoked: refused here at once. */
  forget(keyHash: string): void {
    this.cache.forget([keyHash]);
  }

  /** Waits (at most 5 s) for the last-use writes in flight (shutdown). */
  async flush(): Promise<void> {
    const until = Date.now() + 5_000;
    while (this.touching.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

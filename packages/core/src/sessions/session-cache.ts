import type { SessionRead } from './session-table.js';

/**
 * When a read of the database may still be trusted. SQLite can tell exactly (its data_version changes
 * with any commit by anyone); MySQL/MariaDB cannot, so a read is trusted for `sessions.cache_ttl`.
 */
export interface Freshness {
  /** A stamp taken just before reading. */
  stamp(now: number): number;
  isFresh(stamp: number, now: number): boolean;
  /** False when nothing may be kept (cache_ttl 0 on MySQL). */
  readonly enabled: boolean;
}

export const trustFor = (ttlMs: number): Freshness => ({
  enabled: ttlMs > 0,
  stamp: (now) => now,
  isFresh: (readAt, now) => now - readAt < ttlMs,
});

export const trustUntilChanged = (dataVersion: () => number): Freshness => ({
  enabled: true,
  stamp: () => dataVersion(),
  isFresh: (version) => version === dataVersion(),
});

interface Entry<R> {
  read: R;
  stamp: number;
}

/**
 * What this process read about sessions and their users, by token hash (and about API keys and their
 * owners, by key hash: `R`): never a miss (a login on another instance must work at once), and forgotten
 * at once when this process ends the session. Bounded: past `maxEntries` the oldest reads are dropped first.
 */
export class SessionCache<R = SessionRead> {
  private readonly entries = new Map<string, Entry<R>>();

  constructor(
    private readonly freshness: Freshness,
    private readonly maxEntries = 20_000,
  ) {}

  get(tokenHash: string, now: number): R | undefined {
    const entry = this.entries.get(tokenHash);
    if (!entry) return undefined;
    if (this.freshness.isFresh(entry.stamp, now)) return entry.read;
    this.entries.delete(tokenHash);
    return undefined;
  }

  /** Call `stamp` before reading, `set` after: a commit in between only makes the entry stale sooner. */
  stamp(now: number): number {
    return this.freshness.stamp(now);
  }

  set(tokenHash: string, read: R, stamp: number): void {
    if (!this.freshness.enabled) return;
    this.entries.delete(tokenHash);
    this.entries.set(tokenHash, { read, stamp });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  /** The cached read when it may be trusted, else `read()`'s result, kept with a stamp taken before reading. */
  async through(key: string, now: number, read: () => Promise<R | undefined>): Promise<R | undefined> {
    const cached = this.get(key, now);
    if (cached) return cached;
    const stamp = this.stamp(now);
    const fresh = await read();
    if (fresh) this.set(key, fresh, stamp);
    return fresh;
  }

  /** Keeps the entry's age: a write of our own does not make the rest of what we read any fresher. */
  update(tokenHash: string, read: R): void {
    const entry = this.entries.get(tokenHash);
    if (entry) entry.read = read;
  }

  forget(tokenHashes: Iterable<string>): void {
    for (const tokenHash of tokenHashes) this.entries.delete(tokenHash);
  }

  get size(): number {
    return this.entries.size;
  }
}

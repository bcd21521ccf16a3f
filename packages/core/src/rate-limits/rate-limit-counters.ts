/**
 * Where rate-limit budgets are counted (`rate_limits.store`): the database every gateway shares, or Redis.
 * One call is one atomic increment in one round trip; the store is the only authority, so any number of
 * gateways and workers admit at most `limit` calls per budget and window between them.
 */
export interface RateLimitCounters {
  /**
   * Counts one call against the budget `key` in the window that ends at `windowEnd` (ms since the epoch,
   * aligned to the window) and returns the calls counted in the window, this one included, and when
   * that window ends (later than `windowEnd` when another gateway's clock is ahead: its window wins).
   */
  hit(key: string, windowEnd: number): Promise<{ hits: number; windowEnd: number }>;
  close(): Promise<void>;
}

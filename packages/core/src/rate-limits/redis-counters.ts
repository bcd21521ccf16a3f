import type { Logger } from '../log.js';
import type { RateLimitCounters } from './rate-limit-counters.js';

/**
 * Budgets in Redis (`rate_limits.store: redis`), for rates the database should not carry: one key per
 * budget and window, counted by a Lua script (INCR, and PEXPIREAT on the first call: atomic, one round
 * trip by EVALSHA), gone by itself a second after its window: cheaper than MULTI INCR PEXPIREAT EXEC.
 * Auto-pipelining sends the calls of one turn in one write (both measured: docs/performance.md, "Rate
 * limits"). While Redis is unreachable a call fails at
 * once (no offline queue) and the stage applies `rate_limits.on_store_failure`; ioredis reconnects in the
 * background.
 */
export async function redisCounters(url: string, timeoutMs: number, log: Logger): Promise<RateLimitCounters> {
  // Loaded only for this store: a gateway counting in its database never loads the Redis client.
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
    enableAutoPipelining: true,
  });
  // ioredis reports every failed reconnect: one line when the connection is lost, one when it is back.
  let reachable = true;
  redis.on('error', (err: Error) => {
    if (reachable) log.warn('rate-limit store (redis) unreachable; retrying', { err });
    reachable = false;
  });
  redis.on('ready', () => {
    if (!reachable) log.info('rate-limit store (redis) reachable');
    reachable = true;
  });
  redis.defineCommand('tkgateRateHit', { numberOfKeys: 1, lua: HIT });
  const counting = redis as typeof redis & { tkgateRateHit(key: string, expireAt: number): Promise<number> };
  await redis.connect().catch(() => undefined);
  return {
    async hit(key, windowEnd) {
      const hits = await counting.tkgateRateHit(`tkgate:rate:${key}:${windowEnd}`, windowEnd + 1000);
      return { hits: Number(hits), windowEnd };
    },
    close: async () => redis.disconnect(),
  };
}

/** KEYS[1]: the budget's key for this window; ARGV[1]: when it may go (ms since the epoch). Returns the count. */
const HIT = `local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return hits`;

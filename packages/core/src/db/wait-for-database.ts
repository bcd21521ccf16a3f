import { DIALECTS, type Database } from './connect.js';
import type { Logger } from '../log.js';

/** Connection-level failures: the server is not there (yet), so trying again later may work; with each dialect's own. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  ...DIALECTS.flatMap((dialect) => [...dialect.errors.unreachable]),
]);

/**
 * Whether the database could not be reached at all (refused, reset, timed out, shutting down), as opposed
 * to answering with a refusal of its own (a wrong password, a missing database), which no wait mends.
 */
export function isUnreachable(err: unknown): boolean {
  for (let at = err, depth = 0; at && typeof at === 'object' && depth < 8; at = (at as { cause?: unknown }).cause, depth++) {
    const error = at as { name?: unknown; code?: unknown };
    if (error.name === 'KnexTimeoutError') return true;
    if (typeof error.code === 'string' && UNREACHABLE_CODES.has(error.code)) return true;
  }
  return false;
}

const FIRST_RETRY_MS = 500;
const LONGEST_RETRY_MS = 10_000;

export interface DatabaseWait {
  log: Logger;
  /** Where the database is, without its password (for the log lines). */
  database: string;
  /** Runs one step of the wait, rejecting at once when the start is cancelled (SIGTERM). */
  cancellable: <T>(work: Promise<T>) => Promise<T>;
  /** Told once, when the first attempt failed: the gateway answers /healthz and /readyz while it waits. */
  onWaiting?: () => Promise<void>;
}

/**
 * A database that is down at start (a reboot that brings the gateway up first, a failover) is waited for,
 * with a growing pause between attempts (0.5 s, 1 s, 2 s ... at most 10 s), each logged; anything else it
 * says, and a cancelled start, ends the wait with that error.
 */
export async function waitForDatabase(db: Database, wait: DatabaseWait): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await wait.cancellable(db.raw('select 1'));
      if (attempt > 1) wait.log.info('database reachable', { database: wait.database, attempts: attempt });
      return;
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      if (attempt === 1) await wait.onWaiting?.();
      const retryInMs = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** (attempt - 1));
      wait.log.warn('database unreachable; retrying', { database: wait.database, attempt, retry_in_ms: retryInMs, reason: (err as Error).message });
      await wait.cancellable(new Promise((resolve) => setTimeout(resolve, retryInMs)));
    }
  }
}

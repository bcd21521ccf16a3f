import { dialectOf, type Database } from '../db/connect.js';
import type { BudgetCount } from '../db/dialect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { RateLimitCounters } from './rate-limit-counters.js';

/**
 * Budgets in `tkgate_rate_limits` (migration 007): one row per budget, one statement per call (where the prepared
 * reads have a connection of their own, SQLite's, the calls of an event-loop turn in one transaction). The dialect's
 * upsert (Dialect.budgetHit) is atomic on every database (SQLite serialises writers across processes; MariaDB and
 * PostgreSQL lock the row), so concurrent calls from any number of gateways each see a distinct count. A row whose
 * window has passed starts again at 1; a window never moves back, so a gateway whose clock lags counts into the
 * later one.
 * On the prepared reads' connection the statement is prepared once (PreparedReads.prepareUncachedWrite: its commits
 * leave the read caches standing): cheaper than knex, which prepares every query again and answers in a later turn
 * (docs/performance.md, "Rate limits"). Elsewhere it goes through the knex pool and its db.timeout.
 */
export function databaseCounters(db: Database, reads: PreparedReads): RateLimitCounters {
  const budget = dialectOf(db).budgetHit;
  const countTurn = reads.prepareUncachedWrite<unknown>(budget.upsert);
  if (countTurn) return turnCounters(countTurn, budget.count);
  return {
    hit: async (key, windowEnd) => budget.count(await db.raw(budget.upsert, [key, windowEnd]), windowEnd),
    close: async () => undefined,
  };
}

/**
 * The calls of one event-loop turn are counted together, in one transaction at the turn's end: one commit
 * (its locks and WAL write, most of a counted call's cost) for the turn instead of one per call. Each call
 * still gets its own count, in the order the calls came, and a failed commit fails each of them (the store
 * failure of rate_limits.on_store_failure).
 */
function turnCounters(
  upsertAll: (runs: ReadonlyArray<readonly unknown[]>) => unknown[],
  count: (answer: unknown, windowEnd: number) => BudgetCount,
): RateLimitCounters {
  type Call = { values: [string, number]; counted: (count: BudgetCount) => void; failed: (err: unknown) => void };
  let waiting: Call[] = [];
  const countCalls = () => {
    const calls = waiting;
    waiting = [];
    let answers: unknown[];
    try {
      // Synchronous, as every better-sqlite3 call (knex's too): a lock held elsewhere is waited for up to db.timeout.
      answers = upsertAll(calls.map((call) => call.values));
    } catch (err) {
      for (const call of calls) call.failed(err);
      return;
    }
    calls.forEach((call, i) => call.counted(count(answers[i], call.values[1])));
  };
  return {
    hit(key, windowEnd) {
      return new Promise((counted, failed) => {
        if (waiting.length === 0) setImmediate(countCalls);
        waiting.push({ values: [key, windowEnd], counted, failed });
      });
    },
    // The statement's connection is the prepared reads', closed with them.
    close: async () => undefined,
  };
}

/** Deletes budgets whose window has ended (housekeeping): a new call starts them again anyway. */
export async function sweepRateLimits(db: Database, now = Date.now()): Promise<void> {
  await db('tkgate_rate_limits').where('window_end', '<=', now).delete();
}

import { rawRows, type Database, type DatabaseSettings } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { RateLimitCounters } from './rate-limit-counters.js';

/**
 * Budgets in `tkgate_rate_limits` (migration 007): one row per budget, one statement per call (on SQLite, the
 * calls of an event-loop turn in one transaction). The upsert is atomic on every database (SQLite serialises
 * writers across processes; MariaDB and PostgreSQL lock the row), so concurrent calls from any number of
 * gateways each see a distinct count. A row whose window has passed starts again at 1; a window never moves
 * back, so a gateway whose clock lags counts into the later one.
 * SQLite returns the row (RETURNING), from a statement prepared once on the prepared reads' connection
 * (PreparedReads.prepareUncachedWrite: its commits leave the read caches standing): cheaper than knex, which
 * prepares every query again and answers in a later turn (docs/performance.md, "Rate limits"). MariaDB hands
 * the new count back through LAST_INSERT_ID(expr) in the statement's own answer (0 when the row was inserted:
 * the first call), through the knex pool and its db.timeout. PostgreSQL returns it (RETURNING), through the
 * knex pool too.
 */
export function databaseCounters(db: Database, settings: DatabaseSettings, reads: PreparedReads): RateLimitCounters {
  // Only SQLite's prepared reads have a connection of their own to write through: undefined on the others.
  const sqliteUpsert = reads.prepareUncachedWrite<Budget>(SQLITE_UPSERT);
  if (sqliteUpsert) return sqliteCounters(sqliteUpsert);
  if (settings.client === 'postgres') {
    return {
      async hit(key, windowEnd) {
        const [row] = rawRows<{ hits: number; window_end: number }>(await db.raw(POSTGRES_UPSERT, [key, windowEnd]));
        return { hits: Number(row!.hits), windowEnd: Number(row!.window_end) };
      },
      close: async () => undefined,
    };
  }
  return {
    async hit(key, windowEnd) {
      const [result] = (await db.raw(MYSQL_UPSERT, [key, windowEnd])) as [{ insertId: number }];
      return { hits: Number(result.insertId) || 1, windowEnd };
    },
    close: async () => undefined,
  };
}

type Budget = { hits: number; window_end: number };

/**
 * The calls of one event-loop turn are counted together, in one transaction at the turn's end: one commit
 * (its locks and WAL write, most of a counted call's cost) for the turn instead of one per call. Each call
 * still gets its own count, in the order the calls came, and a failed commit fails each of them (the store
 * failure of rate_limits.on_store_failure).
 */
function sqliteCounters(upsertAll: (runs: ReadonlyArray<readonly unknown[]>) => Array<Budget | undefined>): RateLimitCounters {
  type Call = { values: [string, number]; counted: (count: { hits: number; windowEnd: number }) => void; failed: (err: unknown) => void };
  let waiting: Call[] = [];
  const countTurn = () => {
    const calls = waiting;
    waiting = [];
    let rows: Array<Budget | undefined>;
    try {
      // Synchronous, as every better-sqlite3 call (knex's too): a lock held elsewhere is waited for up to db.timeout.
      rows = upsertAll(calls.map((call) => call.values));
    } catch (err) {
      for (const call of calls) call.failed(err);
      return;
    }
    calls.forEach((call, i) => call.counted({ hits: Number(rows[i]!.hits), windowEnd: Number(rows[i]!.window_end) }));
  };
  return {
    hit(key, windowEnd) {
      return new Promise((counted, failed) => {
        if (waiting.length === 0) setImmediate(countTurn);
        waiting.push({ values: [key, windowEnd], counted, failed });
      });
    },
    // The statement's connection is the prepared reads', closed with them.
    close: async () => undefined,
  };
}

const SQLITE_UPSERT = `INSERT INTO tkgate_rate_limits (key_hash, window_end, hits) VALUES (?, ?, 1)
ON CONFLICT (key_hash) DO UPDATE SET
  hits = CASE WHEN excluded.window_end > window_end THEN 1 ELSE hits + 1 END,
  window_end = MAX(window_end, excluded.window_end)
RETURNING hits, window_end`;

// PostgreSQL's assignments all read the row as it was before the statement.
const POSTGRES_UPSERT = `INSERT INTO tkgate_rate_limits AS budget (key_hash, window_end, hits) VALUES (?, ?, 1)
ON CONFLICT (key_hash) DO UPDATE SET
  hits = CASE WHEN excluded.window_end > budget.window_end THEN 1 ELSE budget.hits + 1 END,
  window_end = GREATEST(budget.window_end, excluded.window_end)
RETURNING hits, window_end`;

// MariaDB evaluates the assignments in order: `hits` must read window_end before it is moved.
const MYSQL_UPSERT = `INSERT INTO tkgate_rate_limits (key_hash, window_end, hits) VALUES (?, ?, 1)
ON DUPLICATE KEY UPDATE
  hits = LAST_INSERT_ID(IF(VALUES(window_end) > window_end, 1, hits + 1)),
  window_end = GREATEST(window_end, VALUES(window_end))`;

/** Deletes budgets whose window has ended (housekeeping): a new call starts them again anyway. */
export async function sweepRateLimits(db: Database, now = Date.now()): Promise<void> {
  await db('tkgate_rate_limits').where('window_end', '<=', now).delete();
}

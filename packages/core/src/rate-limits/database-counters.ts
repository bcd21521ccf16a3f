import Sqlite from 'better-sqlite3';
import { rawRows, sqliteBusyMs, type Database, type DatabaseSettings } from '../db/connect.js';
import type { RateLimitCounters } from './rate-limit-counters.js';

/**
 * Budgets in `tkgate_rate_limits` (migration 007): one row per budget, one statement per call. The upsert
 * is atomic on both databases (SQLite serialises writers across processes; MariaDB locks the row), so
 * concurrent calls from any number of gateways each see a distinct count. A row whose window has passed
 * starts again at 1; a window never moves back, so a gateway whose clock lags counts into the later one.
 * SQLite returns the row (RETURNING), from a statement prepared once on a connection of its own: cheaper
 * than knex, which prepares every query again and answers in a later turn (docs/performance.md, "Rate
 * limits"). MariaDB hands the new count back through LAST_INSERT_ID(expr) in the statement's own answer (0 when
 * the row was inserted: the first call), through the knex pool and its db.timeout. PostgreSQL locks the row
 * as MariaDB does and returns it (RETURNING), through the knex pool too.
 */
export function databaseCounters(db: Database, settings: DatabaseSettings): RateLimitCounters {
  if (settings.client === 'sqlite') return sqliteCounters(settings);
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

function sqliteCounters(settings: DatabaseSettings): RateLimitCounters {
  const connection = new Sqlite(settings.filename);
  connection.pragma('synchronous = NORMAL');
  connection.pragma(`busy_timeout = ${sqliteBusyMs(settings)}`);
  const upsert = connection.prepare<[string, number], { hits: number; window_end: number }>(SQLITE_UPSERT);
  return {
    // Synchronous, as every better-sqlite3 call (knex's too): a lock held elsewhere is waited for up to db.timeout.
    async hit(key, windowEnd) {
      const row = upsert.get(key, windowEnd)!;
      return { hits: Number(row.hits), windowEnd: Number(row.window_end) };
    },
    close: async () => void connection.close(),
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

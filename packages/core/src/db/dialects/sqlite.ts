import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import knex, { type Knex } from 'knex';
import type { ColumnKind } from '../column-types.js';
import type { DatabaseSettings, Dialect, ReadConnection } from '../dialect.js';
import { insertedIdOf, quietKnexLog, withOrderedBindings } from './shared.js';

/** SQLite through better-sqlite3: a file, in this process. */

/** The wait for a lock another connection holds when no db.timeout is given (a tool's own connection). */
const DEFAULT_BUSY_MS = 5_000;
const busyMs = (settings: DatabaseSettings): number => settings.timeout_ms ?? DEFAULT_BUSY_MS;

/** The declared type, by its affinity rules (sqlite.org/datatype3.html 3.1), booleans and dates first. */
export function sqliteColumnKind(declared: string): ColumnKind {
  const type = declared.toUpperCase();
  if (type.includes('BOOL')) return 'boolean';
  if (type.includes('INT')) return 'integer';
  if (type.includes('CHAR') || type.includes('CLOB') || type.includes('TEXT')) return 'text';
  if (type === '' || type.includes('BLOB')) return 'any';
  if (type.includes('DATE') || type.includes('TIME')) return 'temporal';
  if (type.includes('JSON')) return 'text';
  return 'number';
}

/** Result codes of a database that cannot serve now: locked, full, read-only, an I/O error. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOMEM|PROTOCOL)/;

/** SQLite binds numbers, strings, bigints, buffers and null; booleans become 1/0 as knex would store them. */
const sqliteValue = (value: unknown) => (typeof value === 'boolean' ? Number(value) : value === undefined ? null : value);

/**
 * Not read-only: prepareWrite's statements write through it. SQLite moves data_version for other connections'
 * commits only, so those writes leave this connection's caches standing (db/prepared-reads.ts).
 */
function openReadConnection(settings: DatabaseSettings): ReadConnection {
  const connection = new Sqlite(settings.filename, { fileMustExist: true });
  connection.pragma(`busy_timeout = ${busyMs(settings)}`);
  connection.pragma('synchronous = NORMAL');
  const dataVersion = connection.prepare('PRAGMA data_version').pluck();
  return {
    prepare(sql) {
      const statement = connection.prepare(sql);
      return (values) => statement.all(values.map(sqliteValue)) as Array<Record<string, unknown>>;
    },
    prepareWrite<Row>(sql: string) {
      const statement = connection.prepare<unknown[], Row>(sql);
      // IMMEDIATE: the write lock is taken at BEGIN (waiting up to busy_timeout), never by a read upgrading later.
      return connection.transaction((runs: ReadonlyArray<readonly unknown[]>) => runs.map((values) => statement.get(...values))).immediate;
    },
    dataVersion: () => dataVersion.get() as number,
    close: () => connection.close(),
  };
}

/** What better-sqlite3's connection offers: SQLite's online backup API, page by page, writers keep going. */
interface BackupConnection {
  backup(destination: string): Promise<unknown>;
}

// Returns the row (RETURNING), from a statement prepared once on the prepared reads' connection.
const BUDGET_UPSERT = `INSERT INTO tkgate_rate_limits (key_hash, window_end, hits) VALUES (?, ?, 1)
ON CONFLICT (key_hash) DO UPDATE SET
  hits = CASE WHEN excluded.window_end > window_end THEN 1 ELSE hits + 1 END,
  window_end = MAX(window_end, excluded.window_end)
RETURNING hits, window_end`;

const globText = (text: string) => text.replace(/[[*?]/g, '[$&]');

/** Compares text byte for byte already, and sorts NULL first ascending. Its one writer serialises writes across processes. */
export const SQLITE: Dialect = {
  name: 'sqlite',
  driver: 'better-sqlite3',
  system: 'sqlite',
  urlSchemes: [],

  /**
   * The file and its directory are created, WAL journal, foreign keys on, and a busy timeout (db.timeout) so a
   * CLI write never fails a running gateway's write.
   */
  open(settings) {
    mkdirSync(path.dirname(settings.filename), { recursive: true });
    const timeout = settings.timeout_ms;
    return knex({
      client: 'better-sqlite3',
      connection: { filename: settings.filename },
      useNullAsDefault: true,
      log: quietKnexLog,
      ...(timeout === undefined ? {} : { acquireConnectionTimeout: timeout }),
      pool: {
        afterCreate(connection: { pragma(source: string): unknown }, done: (err: Error | null, connection: unknown) => void) {
          connection.pragma('journal_mode = WAL');
          connection.pragma('synchronous = NORMAL');
          connection.pragma('foreign_keys = ON');
          connection.pragma(`busy_timeout = ${busyMs(settings)}`);
          done(null, connection);
        },
      },
    });
  },
  address: (settings) => `sqlite:${settings.filename}`,
  databaseFile: (settings) => settings.filename,
  openReadConnection,
  // A bare `LIMIT ?` makes the statement re-prepare on every run (the planner reads the bound limit): a cast
  // hides the value from the planner.
  boundPage: 'limit cast(? as integer) offset cast(? as integer)',

  writeIsolation: undefined,
  /**
   * A no-op UPDATE as the first statement takes the database's write lock at once, as BEGIN IMMEDIATE would
   * (knex always says BEGIN; SQLite waits out its busy timeout for a lock taken before any read, without a
   * stale snapshot); the row is read after it.
   */
  async lockRow(trx, table, key, columns) {
    const [column] = Object.keys(key);
    const updated = await trx(table)
      .where(key)
      .update({ [column!]: trx.ref(column!) });
    if (updated === 0) return undefined;
    if (columns === undefined) return {};
    return (await trx(table).where(key).first(columns)) as Record<string, unknown> | undefined;
  },

  claimLocks: {
    // A no-op UPDATE takes the write lock at once (as lockRow's does): the claim then reads what it writes, alone.
    begin: async (trx, table) => {
      await trx.raw('UPDATE ?? SET rowid = rowid WHERE 0 = 1', [table]);
    },
    skipLocked: (query) => query,
  },

  exactEquals() {},
  compareText: (builder, column, sqlOperator, value) => builder.where(column, sqlOperator, value),
  exactIn() {},
  orderBy: (builder, column, direction) => builder.orderBy(column, direction),
  // LIKE ignores ASCII case (and PRAGMA case_sensitive_like is per connection and deprecated), so GLOB, which
  // compares bytes; the text's `*`, `?` and `[` are escaped as one-character classes.
  search: {
    pattern: (mode, text) => (mode === 'prefix' ? `${globText(text)}*` : `*${globText(text)}*`),
    where: (builder, column, pattern) => builder.whereRaw('?? GLOB ?', [column, pattern as Knex.Value]),
  },
  exactTextColumn: (column) => column,

  insertReturningId: insertedIdOf,
  budgetHit: {
    upsert: BUDGET_UPSERT,
    count(answer) {
      const row = answer as { hits: number; window_end: number };
      return { hits: Number(row.hits), windowEnd: Number(row.window_end) };
    },
  },

  async readColumns(db) {
    const columns = [];
    const names = (await db.raw("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")) as Array<{ name: string }>;
    for (const { name } of names) {
      const rows = (await db.raw('SELECT name, type FROM pragma_table_info(?)', [name])) as Array<{ name: string; type: string }>;
      for (const row of rows) columns.push({ table: name, column: row.name, kind: sqliteColumnKind(row.type), generated: false });
    }
    return columns;
  },
  transactionalDdl: true,
  withBindings: withOrderedBindings,

  errors: {
    uniqueViolation: new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']),
    retryable: new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT']),
    unreachable: new Set(),
    failedToServe: (error) => typeof error.code === 'string' && UNAVAILABLE.test(error.code),
  },

  /** The online backup API: a consistent copy while gateways keep serving (a plain `cp` of a WAL database is not). */
  async backup(db, target) {
    if (existsSync(target)) throw new Error(`${target} exists: a backup never overwrites a file`);
    const connection = (await db.client.acquireConnection()) as BackupConnection;
    try {
      await connection.backup(target);
    } finally {
      await db.client.releaseConnection(connection);
    }
  },
};

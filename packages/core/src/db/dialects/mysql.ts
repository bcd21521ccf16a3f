import type { Knex } from 'knex';
import type { ColumnKind } from '../column-types.js';
import type { DatabaseSettings, Dialect, DriverError } from '../dialect.js';
import {
  SKIP_LOCKED,
  DEFAULT_CONNECT_MS,
  insertedIdOf,
  likePattern,
  lockRowForUpdate,
  openServerPool,
  serverAddress,
  serverUrl,
  withOrderedBindings,
} from './shared.js';

/** MySQL and MariaDB through mysql2. */

const URL_SCHEMES = ['mysql', 'mariadb'];

interface Mysql2Connection {
  query(options: { sql: string; timeout?: number }, ...rest: unknown[]): unknown;
  destroy(): void;
}

/**
 * Every query of a pooled MySQL connection gets mysql2's inactivity timeout; a query that ran out of it
 * leaves its connection waiting for the old answer, so the connection is destroyed (knex's pool then
 * drops it) and the caller gets the timeout error.
 */
function boundQueries(timeout: number) {
  return (connection: Mysql2Connection, done: (err: Error | null, connection: unknown) => void) => {
    const query = connection.query.bind(connection);
    connection.query = (options, ...rest) => {
      const callback = rest.at(-1);
      if (typeof options !== 'object' || typeof callback !== 'function') return query(options, ...rest);
      const onResult = (err: { code?: string } | null, ...results: unknown[]) => {
        if (err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') connection.destroy();
        return (callback as (...args: unknown[]) => unknown)(err, ...results);
      };
      return query({ timeout, ...options }, ...rest.slice(0, -1), onResult);
    };
    done(null, connection);
  };
}

/** Epoch-millisecond BIGINTs come back as numbers (they fit in 2^53); larger ones as exact text. */
function mysqlConnection(url: string, timeout: number | undefined): Knex.MySql2ConnectionConfig {
  const parsed = serverUrl(url, URL_SCHEMES);
  return {
    host: parsed.hostname,
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')),
    charset: 'utf8mb4',
    supportBigNumbers: true,
    bigNumberStrings: false,
    connectTimeout: timeout ?? DEFAULT_CONNECT_MS,
  };
}

/** information_schema.COLUMNS' DATA_TYPE and COLUMN_TYPE. Unknown types compare as text. */
export function mysqlColumnKind(dataType: string, columnType: string): ColumnKind {
  const type = dataType.toLowerCase();
  if (type === 'tinyint' && /^tinyint\(1\)/i.test(columnType)) return 'boolean';
  if (['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint', 'year'].includes(type)) return 'integer';
  if (['decimal', 'numeric', 'float', 'double', 'real'].includes(type)) return 'number';
  if (['date', 'datetime', 'timestamp', 'time'].includes(type)) return 'temporal';
  return 'text';
}

/** Server errors of a database that cannot serve now: locks, a read-only or full server, rights, limits, shutdown. */
const UNAVAILABLE = new Set([
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_ABORTED',
  'ER_CANT_LOCK',
  'ER_OPTION_PREVENTS_STATEMENT',
  'ER_READ_ONLY_MODE',
  'ER_RECORD_FILE_FULL',
  'ER_DISK_FULL',
  'ER_ERROR_ON_WRITE',
  'ER_OUT_OF_RESOURCES',
  'ER_OUTOFMEMORY',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_SERVER_SHUTDOWN',
  'ER_QUERY_INTERRUPTED',
  'ER_STATEMENT_TIMEOUT',
  'ER_ACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_TABLEACCESS_DENIED_ERROR',
]);

const failedToServe = (error: DriverError): boolean => {
  if (error.fatal === true) return true; // the connection failed or was closed
  if (typeof error.code !== 'string') return false;
  if (error.code === 'PROTOCOL_SEQUENCE_TIMEOUT' || UNAVAILABLE.has(error.code)) return true;
  return typeof error.sqlState === 'string' && error.sqlState.startsWith('08'); // SQLSTATE class 08: connection exception
};

// MariaDB evaluates the assignments in order: `hits` must read window_end before it is moved. The new count
// comes back through LAST_INSERT_ID(expr) in the statement's own answer (0 when the row was inserted: the
// first call), through the knex pool and its db.timeout.
const BUDGET_UPSERT = `INSERT INTO tkgate_rate_limits (key_hash, window_end, hits) VALUES (?, ?, 1)
ON DUPLICATE KEY UPDATE
  hits = LAST_INSERT_ID(IF(VALUES(window_end) > window_end, 1, hits + 1)),
  window_end = GREATEST(window_end, VALUES(window_end))`;

/**
 * A text column has the operator's collation, by default case- and accent-insensitive and PAD SPACE ("Alpha "
 * equals "alpha", "a" < "B"): comparisons of binary strings beside the plain one (which keeps the column's index
 * usable) are exact. An order of binary strings cannot use an index on the text column.
 */
export const MYSQL: Dialect = {
  name: 'mysql',
  driver: 'mysql2',
  system: 'mysql',
  urlSchemes: URL_SCHEMES,

  open: (settings: DatabaseSettings) => openServerPool(settings, 'mysql2', mysqlConnection(settings.url, settings.timeout_ms), boundQueries),
  address: (settings) => serverAddress(settings, 'mysql', 3306),
  databaseFile: () => undefined,
  boundPage: 'limit ? offset ?',

  // READ COMMITTED: searches take no gap locks (the usual source of deadlocks between concurrent inserts and deletes).
  writeIsolation: 'read committed',
  lockRow: lockRowForUpdate,
  claimLocks: SKIP_LOCKED,

  exactEquals(builder, column, value) {
    builder.whereRaw('CAST(?? AS BINARY) = CAST(? AS BINARY)', [column, value]);
  },
  compareText: (builder, column, sqlOperator, value) => builder.whereRaw(`CAST(?? AS BINARY) ${sqlOperator} CAST(? AS BINARY)`, [column, value]),
  exactIn(builder, column, values) {
    builder.whereRaw(`CAST(?? AS BINARY) IN (${values.map(() => 'CAST(? AS BINARY)').join(', ')})`, [column, ...values]);
  },
  orderBy: (builder, column, direction, text) => (text ? builder.orderByRaw(`CAST(?? AS BINARY) ${direction}`, [column]) : builder.orderBy(column, direction)),
  // LIKE follows the collation, so a LIKE of binary strings decides; the plain LIKE before it keeps a prefix
  // search able to use the column's index.
  search: {
    pattern: likePattern,
    where: (builder, column, pattern) =>
      builder
        .whereRaw("?? LIKE ? ESCAPE '!'", [column, pattern as Knex.Value])
        .whereRaw("CAST(?? AS BINARY) LIKE CAST(? AS BINARY) ESCAPE '!'", [column, pattern as Knex.Value]),
  },
  exactTextColumn: (column) => column.collate('utf8mb4_bin'),

  insertReturningId: insertedIdOf,
  budgetHit: {
    upsert: BUDGET_UPSERT,
    count(answer, windowEnd) {
      const [result] = answer as [{ insertId: number }];
      return { hits: Number(result.insertId) || 1, windowEnd };
    },
  },

  async readColumns(db) {
    const [rows] = (await db.raw(
      'SELECT TABLE_NAME AS t, COLUMN_NAME AS c, DATA_TYPE AS d, COLUMN_TYPE AS ct FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()',
    )) as [Array<{ t: string; c: string; d: string; ct: string }>];
    return rows.map((row) => ({ table: row.t, column: row.c, kind: mysqlColumnKind(row.d, row.ct), generated: false }));
  },
  transactionalDdl: false,
  withBindings: withOrderedBindings,

  errors: {
    uniqueViolation: new Set(['ER_DUP_ENTRY']),
    retryable: new Set(['ER_LOCK_DEADLOCK']),
    unreachable: new Set(['PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_CON_COUNT_ERROR', 'ER_SERVER_SHUTDOWN']),
    failedToServe,
  },

  backup: async () => {
    throw new Error('tkgate backup copies SQLite databases; for MySQL/MariaDB use mysqldump --single-transaction (docs/upgrading.md)');
  },
};

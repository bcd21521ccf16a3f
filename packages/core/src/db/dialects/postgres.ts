import type { Knex } from 'knex';
import pg from 'pg';
import type { ColumnKind } from '../column-types.js';
import type { DatabaseSettings, Dialect, DriverError } from '../dialect.js';
import { rawRows } from '../raw-rows.js';
import { openPostgresListener } from './postgres-listener.js';
import { SKIP_LOCKED, DEFAULT_CONNECT_MS, likePattern, lockRowForUpdate, openServerPool, serverAddress, serverUrl } from './shared.js';

/** PostgreSQL through node-postgres (pg). */

const URL_SCHEMES = ['postgres', 'postgresql'];

/**
 * PostgreSQL answers BIGINT (and COUNT) as text; as on MySQL/MariaDB, a value that fits in 2^53 becomes a
 * number and a larger one stays exact as text. Every other type keeps node-postgres' own parser.
 */
const BIGINT_OID = 20;
const bigintAsNumber = (text: string): number | string => {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : text;
};
const postgresTypes: Knex.PgCustomTypesConfig = {
  getTypeParser: (oid: number, format?: string) =>
    oid === BIGINT_OID && format !== 'binary' ? bigintAsNumber : pg.types.getTypeParser(oid, format === 'binary' ? 'binary' : 'text'),
};

const CLIENT_MARGIN_MS = 500;

function postgresConnection(url: string, timeout: number | undefined): Knex.PgConnectionConfig {
  serverUrl(url, URL_SCHEMES);
  // The server ends a statement past db.timeout itself (a lock wait, say: nothing runs later), and the
  // client gives up shortly after when the server does not even answer that (paused, or the network).
  const bounds = timeout === undefined ? {} : { statement_timeout: timeout, query_timeout: timeout + CLIENT_MARGIN_MS };
  return { connectionString: url, types: postgresTypes, connectionTimeoutMillis: timeout ?? DEFAULT_CONNECT_MS, ...bounds };
}

interface PgConnection {
  query(config: unknown, callback?: unknown): unknown;
  __knex__disposed?: unknown;
}

/** node-postgres' message when a query did not answer within `query_timeout`. */
const QUERY_TIMEOUT = 'Query read timeout';

/**
 * node-postgres' `query_timeout` answers the caller but leaves the connection waiting for the old answer:
 * marked disposed, knex's pool drops it instead of lending it again.
 */
function dropTimedOutConnections(connection: PgConnection, done: (err: Error | null, connection: unknown) => void) {
  const query = connection.query.bind(connection);
  connection.query = (config, callback) => {
    if (typeof callback !== 'function') return query(config, callback);
    return query(config, (err: Error | null, ...results: unknown[]) => {
      if (err?.message === QUERY_TIMEOUT) connection.__knex__disposed = err;
      return (callback as (...args: unknown[]) => unknown)(err, ...results);
    });
  };
  done(null, connection);
}

/** information_schema.columns' data_type. Unknown types (uuid, json, enums...) compare as text. */
export function postgresColumnKind(dataType: string): ColumnKind {
  const type = dataType.toLowerCase();
  if (type === 'boolean') return 'boolean';
  if (['smallint', 'integer', 'bigint'].includes(type)) return 'integer';
  if (['numeric', 'real', 'double precision', 'money'].includes(type)) return 'number';
  if (type === 'date' || type.startsWith('timestamp') || type.startsWith('time') || type === 'interval') return 'temporal';
  return 'text';
}

/** The SQLSTATEs (its errors' `code`) named here. */
const UNIQUE_VIOLATION = '23505';
const SERIALIZATION_FAILURE = '40001';
const DEADLOCK = '40P01';

/**
 * SQLSTATEs of a database that cannot serve now: lock waits and conflicts, a read-only transaction, rights,
 * resources (class 53: disk full, memory, connections), an operator's cancel or shutdown (class 57), the server
 * refusing connections now; class 08 (connection exceptions) is caught by its prefix.
 */
const UNAVAILABLE = new Set([
  DEADLOCK,
  SERIALIZATION_FAILURE,
  '55P03',
  '55006',
  '25006',
  '42501',
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '57P04',
  '53000',
  '53100',
  '53200',
  '53300',
  '53400',
  '28000',
  '28P01',
]);
/** node-postgres' own messages for a connection that failed, ended or did not answer (they carry no code). */
const CONNECTION_FAILURE =
  /(^| - )(Query read timeout|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

const failedToServe = (error: DriverError): boolean => {
  if (typeof error.message === 'string' && CONNECTION_FAILURE.test(error.message)) return true;
  return typeof error.code === 'string' && (UNAVAILABLE.has(error.code) || /^08[0-9A-Z]{3}$/.test(error.code));
};

// The assignments all read the row as it was before the statement; the row comes back (RETURNING) through
// the knex pool.
const BUDGET_UPSERT = `INSERT INTO tkgate_rate_limits AS budget (key_hash, window_end, hits) VALUES (?, ?, 1)
ON CONFLICT (key_hash) DO UPDATE SET
  hits = CASE WHEN excluded.window_end > budget.window_end THEN 1 ELSE budget.hits + 1 END,
  window_end = GREATEST(budget.window_end, excluded.window_end)
RETURNING hits, window_end`;

/**
 * The default collations compare exactly, but a CHAR(n) column ignores trailing spaces, an operator may give a
 * column a nondeterministic (ICU) collation, and the default order follows the locale: comparisons and orders
 * in the bytewise "C" collation are exact. NULL sorts last ascending unless told.
 */
export const POSTGRES: Dialect = {
  name: 'postgres',
  driver: 'pg',
  system: 'postgresql',
  urlSchemes: URL_SCHEMES,

  open: (settings: DatabaseSettings) => openServerPool(settings, 'pg', postgresConnection(settings.url, settings.timeout_ms), () => dropTimedOutConnections),
  address: (settings) => serverAddress(settings, 'postgres', 5432),
  databaseFile: () => undefined,
  // db.raw numbers the placeholders ($1, $2...) itself.
  boundPage: 'limit ? offset ?',

  // READ COMMITTED already: each statement sees what committed before it began, after the row locks it waited for.
  writeIsolation: undefined,
  lockRow: lockRowForUpdate,
  claimLocks: SKIP_LOCKED,
  openListener: openPostgresListener,

  exactEquals(builder, column, value) {
    builder.whereRaw('CAST(?? AS TEXT) COLLATE "C" = CAST(? AS TEXT)', [column, value]);
  },
  compareText: (builder, column, sqlOperator, value) => builder.whereRaw(`?? COLLATE "C" ${sqlOperator} ?`, [column, value]),
  exactIn() {},
  orderBy(builder, column, direction, text) {
    const nulls = direction === 'asc' ? 'first' : 'last';
    if (text) return builder.orderByRaw(`?? COLLATE "C" ${direction} nulls ${nulls}`, [column]);
    return builder.orderBy(column, direction, nulls);
  },
  // LIKE is case-sensitive.
  search: {
    pattern: likePattern,
    where: (builder, column, pattern) => builder.whereRaw("?? LIKE ? ESCAPE '!'", [column, pattern as Knex.Value]),
  },
  exactTextColumn: (column) => column,

  // The database reports no id by itself: the generated column is returned by the insert. Ids past 2^53 come
  // back as exact text.
  async insertReturningId(db, table, row, generated) {
    if (generated === undefined) {
      await db(table).insert(row);
      return 0;
    }
    const [inserted] = (await db(table).insert(row).returning(generated)) as Array<Record<string, unknown>>;
    return inserted?.[generated];
  },
  budgetHit: {
    upsert: BUDGET_UPSERT,
    count(answer) {
      const [row] = rawRows<{ hits: number; window_end: number }>(answer);
      return { hits: Number(row!.hits), windowEnd: Number(row!.window_end) };
    },
  },

  // The schema tkgate's tables are in (the connection's search_path), tables and views alike.
  async readColumns(db) {
    const rows = rawRows<{ t: string; c: string; d: string; g: boolean }>(
      await db.raw(
        "SELECT table_name AS t, column_name AS c, data_type AS d, (is_identity = 'YES' OR column_default LIKE 'nextval(%') AS g FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
      ),
    );
    return rows.map((row) => ({ table: row.t, column: row.c, kind: postgresColumnKind(row.d), generated: row.g }));
  },
  transactionalDdl: true,
  // The statements arrive with numbered placeholders ($1).
  withBindings: (sql, bound) => sql.replace(/\$(\d+)/g, (mark, n: string) => bound(Number(n) - 1, mark)),

  errors: {
    uniqueViolation: new Set([UNIQUE_VIOLATION]),
    retryable: new Set([DEADLOCK, SERIALIZATION_FAILURE]),
    unreachable: new Set(),
    failedToServe,
  },

  backup: async () => {
    throw new Error('tkgate backup copies SQLite databases; for PostgreSQL use pg_dump --format=custom (docs/upgrading.md)');
  },
};

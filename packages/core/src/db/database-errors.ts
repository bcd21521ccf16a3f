import { unavailable, type GatewayErrorShape } from '../errors.js';

/**
 * What a failed database call may say in a log line or an error's cause: the driver's code and its own
 * message. knex prefixes messages with the statement and its values inlined ("delete from sessions where
 * token_hash = '…' - …"), and those values are token hashes: that prefix never leaves here.
 */
export type DatabaseErrorSummary = {
  code?: string;
  errno?: number;
  message: string;
};

const SQL_PREFIX = /^\s*(select|insert|update|delete|replace|begin|commit|rollback|set|with|pragma|alter|create|drop)\b/i;
const HEX_RUN = /[0-9a-f]{32,}/gi;

export function describeDatabaseError(err: unknown): DatabaseErrorSummary {
  const error = (err ?? {}) as { code?: unknown; errno?: unknown; sqlMessage?: unknown; message?: unknown };
  let message = typeof error.sqlMessage === 'string' ? error.sqlMessage : String(error.message ?? err);
  if (SQL_PREFIX.test(message)) {
    const cut = message.lastIndexOf(' - ');
    message = cut >= 0 ? message.slice(cut + 3) : 'statement failed';
  }
  const summary: DatabaseErrorSummary = { message: message.replace(HEX_RUN, (run) => `${run.slice(0, 8)}…`) };
  if (typeof error.code === 'string') summary.code = error.code;
  if (typeof error.errno === 'number') summary.errno = error.errno;
  return summary;
}

/** PostgreSQL's SQLSTATEs (its errors' `code`) that this module names. */
const PG_UNIQUE_VIOLATION = '23505';
const PG_SERIALIZATION_FAILURE = '40001';
const PG_DEADLOCK = '40P01';

/**
 * A transaction lost to another one (a MySQL or PostgreSQL deadlock victim, a PostgreSQL serialization
 * failure, or SQLite still busy): safe to run again.
 */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === 'ER_LOCK_DEADLOCK' || code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === PG_DEADLOCK || code === PG_SERIALIZATION_FAILURE;
}

/** Whether a database error is a unique-key violation (any dialect): someone else wrote that key first. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === 'ER_DUP_ENTRY' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === PG_UNIQUE_VIOLATION;
}

/**
 * Runs a write the answer depends on; when the database refuses it, the request gets 503 `unavailable`
 * (nothing changed: retry), with a cause naming what failed and the driver's code, never SQL or values.
 */
export async function unavailableWhenRefused<T>(what: string, write: () => Promise<T>, fields: Record<string, unknown> = {}): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw unavailable({ what, ...fields, ...describeDatabaseError(err) });
  }
}

/** SQLite result codes of a database that cannot serve now: locked, full, read-only, an I/O error. */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOMEM|PROTOCOL)/;
/** MySQL/MariaDB server errors of the same kind: locks, a read-only or full server, rights, limits, shutdown. */
const MYSQL_UNAVAILABLE = new Set([
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

/**
 * PostgreSQL SQLSTATEs of the same kind: lock waits and conflicts, a read-only transaction, rights, resources
 * (class 53: disk full, memory, connections), an operator's cancel or shutdown (class 57), the server
 * refusing connections now; class 08 (connection exceptions) is caught by its prefix below.
 */
const PG_UNAVAILABLE = new Set([
  PG_DEADLOCK,
  PG_SERIALIZATION_FAILURE,
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
/** The network failing under any driver (node-postgres reports these as they are). */
const NETWORK_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** node-postgres' own messages for a connection that failed, ended or did not answer (they carry no code). */
const PG_CONNECTION_FAILURE =
  /(^| - )(Query read timeout|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * Whether `err` (or an error in its cause chain) is the database failing to serve: it did not answer
 * within db.timeout (a query, a connection, the pool), the connection failed, or the server refused for
 * want of a lock, space, rights or connections. A statement's own mistake (a constraint, a missing table)
 * is not: that stays a 500, a toolkit's or the schema's bug, which no retry mends.
 */
export function isDatabaseFailure(err: unknown): boolean {
  for (let at = err, depth = 0; at && typeof at === 'object' && depth < 8; at = (at as { cause?: unknown }).cause, depth++) {
    const error = at as { name?: unknown; code?: unknown; sqlState?: unknown; fatal?: unknown; message?: unknown };
    if (error.name === 'KnexTimeoutError' || error.fatal === true) return true; // mysql2: the connection failed or was closed
    if (typeof error.message === 'string' && PG_CONNECTION_FAILURE.test(error.message)) return true;
    if (typeof error.code !== 'string') continue;
    if (error.code === 'PROTOCOL_SEQUENCE_TIMEOUT' || SQLITE_UNAVAILABLE.test(error.code) || MYSQL_UNAVAILABLE.has(error.code)) return true;
    if (PG_UNAVAILABLE.has(error.code) || NETWORK_FAILURES.has(error.code) || /^08[0-9A-Z]{3}$/.test(error.code)) return true;
    if (typeof error.sqlState === 'string' && error.sqlState.startsWith('08')) return true; // SQLSTATE class 08: connection exception
  }
  return false;
}

/** The innermost database error of a cause chain, for the log line's summary. */
function databaseCause(err: unknown): unknown {
  let found = err;
  for (let at = err, depth = 0; at && typeof at === 'object' && depth < 8; at = (at as { cause?: unknown }).cause, depth++) {
    if (isDatabaseFailure(at)) found = at;
  }
  return found;
}

/**
 * The one mapping of database failures on the request path (http/error-envelope.ts calls it): an error
 * that would be a 500 because the database failed or did not answer within db.timeout is 503
 * `unavailable` with Retry-After instead; anything else is returned as it is.
 */
export function unavailableWhenDatabaseFailed(error: GatewayErrorShape, thrown: unknown): GatewayErrorShape {
  if (error.status !== 500) return error;
  const failure = isDatabaseFailure(error.cause) ? error.cause : isDatabaseFailure(thrown) ? thrown : undefined;
  if (failure === undefined) return error;
  return unavailable(
    { what: error.code === 'internal_error' ? 'database' : error.code, ...describeDatabaseError(databaseCause(failure)) },
    'the database did not answer in time or refused; try again shortly',
  );
}

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

/** A transaction lost to another one (MySQL deadlock victim, or SQLite still busy): safe to run again. */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === 'ER_LOCK_DEADLOCK' || code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT';
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
 * Whether `err` (or an error in its cause chain) is the database failing to serve: it did not answer
 * within db.timeout (a query, a connection, the pool), the connection failed, or the server refused for
 * want of a lock, space, rights or connections. A statement's own mistake (a constraint, a missing table)
 * is not: that stays a 500, a toolkit's or the schema's bug, which no retry mends.
 */
export function isDatabaseFailure(err: unknown): boolean {
  for (let at = err, depth = 0; at && typeof at === 'object' && depth < 8; at = (at as { cause?: unknown }).cause, depth++) {
    const error = at as { name?: unknown; code?: unknown; sqlState?: unknown; fatal?: unknown };
    if (error.name === 'KnexTimeoutError' || error.fatal === true) return true; // mysql2: the connection failed or was closed
    if (typeof error.code !== 'string') continue;
    if (error.code === 'PROTOCOL_SEQUENCE_TIMEOUT' || SQLITE_UNAVAILABLE.test(error.code) || MYSQL_UNAVAILABLE.has(error.code)) return true;
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

import { unavailable, type GatewayErrorShape } from '../errors.js';
import { DIALECTS } from './connect.js';
import type { DriverError } from './dialect.js';

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

const codeOf = (err: unknown): unknown => (err as { code?: unknown })?.code;

/**
 * A transaction lost to another one (a MySQL or PostgreSQL deadlock victim, a PostgreSQL serialization
 * failure, or SQLite still busy): safe to run again. An error does not say whose it is: every dialect is asked.
 */
export function isRetryable(err: unknown): boolean {
  const code = codeOf(err);
  return typeof code === 'string' && DIALECTS.some((dialect) => dialect.errors.retryable.has(code));
}

/** Whether a database error is a unique-key violation (any dialect): someone else wrote that key first. */
export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err);
  return typeof code === 'string' && DIALECTS.some((dialect) => dialect.errors.uniqueViolation.has(code));
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

/** The network failing under any driver (node-postgres reports these as they are). */
const NETWORK_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * Whether `err` (or an error in its cause chain) is the database failing to serve: it did not answer
 * within db.timeout (a query, a connection, the pool), the connection failed, or the server refused for
 * want of a lock, space, rights or connections. A statement's own mistake (a constraint, a missing table)
 * is not: that stays a 500, a toolkit's or the schema's bug, which no retry mends.
 */
export function isDatabaseFailure(err: unknown): boolean {
  for (let at = err, depth = 0; at && typeof at === 'object' && depth < 8; at = (at as { cause?: unknown }).cause, depth++) {
    const error = at as DriverError;
    if (error.name === 'KnexTimeoutError') return true;
    if (typeof error.code === 'string' && NETWORK_FAILURES.has(error.code)) return true;
    if (DIALECTS.some((dialect) => dialect.errors.failedToServe(error))) return true;
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

import { unavailable } from '../errors.js';

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

import { dialectOf, type Database } from '../db/connect.js';
import type { RequestTrace } from './request-trace.js';
import type { ChildSpan } from './trace-api.js';

/**
 * A span for one of the pipeline's database reads (steps 5 and 6), only when spans are recorded: with
 * tracing off the read costs nothing more. `db.system.name` as the semantic conventions spell it;
 * `tkgate.cached` when the answer came from the prepared-read cache without a query.
 */
/** `db.system.name` of the semantic conventions for the gateway's database. */
export const databaseSystemName = (db: Database): string => dialectOf(db).system;

export function databaseSpan(trace: RequestTrace, name: string, db: Database): ChildSpan | undefined {
  if (!trace.recording) return undefined;
  return trace.startSpan(name, { attributes: { 'db.system.name': databaseSystemName(db), 'db.operation.name': 'SELECT' } });
}

import type { Database } from '../db/connect.js';
import type { PreparedRead, PreparedReads } from '../db/prepared-reads.js';
import { whereExactly } from '../db/exact-match.js';
import { GatewayError, invalidPayload } from '../errors.js';
import { NOT_CONVERTIBLE } from '../db/column-types.js';
import type { DbContextEntry } from '../toolkits/db-context-entries.js';
import type { AuthenticatedState } from '../auth/authenticate.js';
import { databaseSpan } from '../tracing/database-span.js';
import type { Stage } from '../http/stage.js';
import type { DbContextRead, EndpointFound, PayloadFiltered } from './pipeline-state.js';

/** Most rows a filtered inject_db_context entry returns. */
export const MAX_FILTERED_ROWS = 1000;

/**
 * Step 5: inject_db_context values. Table and column names come from configuration checked against
 * the schema at load; the caller's id and payload values are bound parameters, payload values converted
 * to the filter column's type first. A failing query is 500 db_context_failed; a $payload field that is
 * absent, not a single value or not convertible to the column's type is 400.
 */
export function dbContextStep(db: Database, reads: PreparedReads): Stage<AuthenticatedState & EndpointFound & PayloadFiltered, DbContextRead> {
  /** Each entry's query, prepared on first use; a reload makes new entries, so old ones just go. */
  const prepared = new WeakMap<DbContextEntry, PreparedRead>();
  const queryOf = (entry: DbContextEntry) => {
    let read = prepared.get(entry);
    if (!read) prepared.set(entry, (read = prepareEntry(db, reads, entry)));
    return read;
  };
  return (ctx, next) => {
    const { dbContext: entries } = ctx.state.endpoint;
    const dbContext: Record<string, unknown> = {};
    (ctx.state as typeof ctx.state & DbContextRead).dbContext = dbContext;
    if (entries.length === 0) return next();
    const callerId = ctx.state.caller.id;
    const { payload, pathParams } = ctx.state;
    const params = entries.map((entry) => [entry.filter ? filterValue(entry, entry.filter.source === 'path' ? pathParams! : payload) : callerId]);
    const failed = (err: unknown) => new GatewayError(500, 'db_context_failed', 'the database context could not be fetched', { cause: err });
    let reads;
    try {
      reads = entries.map(queryOf);
    } catch (err) {
      throw failed(err);
    }
    const fill = (rowsOf: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>) =>
      entries.forEach((entry, index) => (dbContext[entry.key] = valueOf(entry, rowsOf[index]!)));
    const span = databaseSpan(ctx.state.trace, 'db-context', db);
    // All cached (SQLite, unchanged since read): filled at once, no promise to wait for.
    const cached = reads.map((read, index) => read.cachedRows(params[index]));
    if (cached.every((rows) => rows !== undefined)) {
      fill(cached as Array<ReadonlyArray<Record<string, unknown>>>);
      span?.setAttribute('tkgate.cached', true);
      span?.end();
      return next();
    }
    return Promise.all(reads.map((read, index) => read.all(params[index])))
      .then(
        (rows) => {
          span?.end();
          fill(rows);
        },
        (err: unknown) => {
          span?.end(err);
          throw failed(err);
        },
      )
      .then(next);
  };
}

function prepareEntry(db: Database, reads: PreparedReads, entry: DbContextEntry): PreparedRead {
  if (entry.filter) {
    // Strings compare byte for byte on both databases (db/exact-match.ts).
    const { column, type } = entry.filter;
    return reads.prepare((param) => whereExactly(db(entry.table), column, param(0), type).limit(MAX_FILTERED_ROWS).select(entry.column), { cached: true });
  }
  return reads.prepare((param) => db(entry.table).where(entry.ownerColumn!, param(0)).first(entry.column), { cached: true });
}

/** The payload (or path parameter) value a filtered entry compares, as the filter column's type: absent, not a scalar or not convertible is 400. */
function filterValue(entry: DbContextEntry, values: Record<string, unknown>): unknown {
  const { type, source } = entry.filter!;
  const field = source === 'path' ? `path.${entry.filter!.payloadField}` : entry.filter!.payloadField;
  const value = values[entry.filter!.payloadField];
  if (value === undefined) throw invalidPayload([{ field, rule: 'required', message: `${field} is needed to look up ${entry.key}` }]);
  if (value !== null && typeof value === 'object') {
    throw invalidPayload([{ field, rule: 'type', message: `${field} must be a single value to look up ${entry.key}` }]);
  }
  const converted = type.convert(value);
  if (converted === NOT_CONVERTIBLE) throw invalidPayload([{ field, rule: 'type', message: `${field} must be ${type.expected} to look up ${entry.key}` }]);
  return converted;
}

/** A filtered entry is the list of the column's values; an owned one is the caller's row's value, or null. */
function valueOf(entry: DbContextEntry, rows: ReadonlyArray<Record<string, unknown>>): unknown {
  if (entry.filter) return rows.map((row) => row[entry.column]);
  const [row] = rows;
  return row ? row[entry.column] : null;
}

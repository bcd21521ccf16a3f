import {
  GatewayError,
  insertReturningId,
  NOT_CONVERTIBLE,
  whereExactly,
  type Database,
  type DatabaseSchema,
  type PluginApi,
  type PreparedRead,
  type RequestContext,
} from '@tkgate/core';
import { bindValue, parseValue, type BoundValue, type ColumnValue } from './bound-values.js';
import { DEFAULT_SELECT_LIMIT, type PseudoQuery, type Scalar } from './internal-config.js';

/** A query ready to run: its values parsed and typed once at load, bound per request. */
export interface PreparedQuery {
  query: PseudoQuery;
  label: string;
  where: ColumnValue[];
  values: ColumnValue[];
  /** The column PostgreSQL returns as an insert's id (DatabaseSchema.generatedColumn). */
  generated?: string;
  /** A select, compiled once with its where values as parameters (SQL NULL needs IS NULL, so not for nulls). */
  read?: PreparedRead;
}

/** `schema` is the one the endpoint was checked against: it gives each column's type. */
export function prepareQueries(queries: PseudoQuery[], db: Database, prepareRead: PluginApi['prepareRead'], schema: DatabaseSchema): PreparedQuery[] {
  const bound = (table: string, map: Record<string, Scalar> | undefined): ColumnValue[] =>
    Object.entries(map ?? {}).map(([column, raw]) => {
      const type = schema.columnType(table, column);
      const value = parseValue(raw) as BoundValue;
      // Literals are converted once; the load-time check has refused those that do not convert.
      return { column, type, value: 'literal' in value ? { literal: type.convert(value.literal) as Scalar } : value };
    });
  return queries.map((query, index) => {
    const where = bound(query.table, query.where);
    const entry: PreparedQuery = { query, label: `pseudo query ${query.name ?? index}`, where, values: bound(query.table, query.values) };
    if (query.op === 'insert') entry.generated = schema.generatedColumn(query.table);
    if (query.op === 'select') {
      // Cached on SQLite until anyone commits to the file (data_version, exact): read-mostly tools read
      // the same rows over and over; MySQL/MariaDB always reads.
      entry.read = prepareRead(
        (param) => {
          const builder = db(query.table)
            .select(query.columns!)
            .limit(query.limit ?? DEFAULT_SELECT_LIMIT);
          where.forEach(({ column, type }, i) => whereExactly(builder, column, param(i), type));
          for (const order of query.orderBy ?? []) builder.orderBy(order.replace(/^-/, ''), order.startsWith('-') ? 'desc' : 'asc');
          return builder;
        },
        { cached: true },
      );
    }
    return entry;
  });
}

/**
 * Runs the queries in order, in one transaction (a single select needs none). Every value is bound and
 * converted before the transaction starts, so a missing or mistyped payload field writes nothing.
 */
export async function runQueries(db: Database, prepared: PreparedQuery[], context: RequestContext): Promise<unknown> {
  const resolved = prepared.map((entry) => ({ entry, where: bindAll(entry.where, context, entry.label), values: bindAll(entry.values, context, entry.label) }));
  for (const { entry, values } of resolved) {
    const column = entry.values.find((value) => values[value.column] === NOT_CONVERTIBLE);
    if (column)
      throw new GatewayError(500, 'internal_error', 'internal error', {
        cause: new Error(`${entry.label}: the value for ${entry.query.table}.${column.column} is not ${column.type.expected}`),
      });
  }
  const runAll = async (trx: Database) => {
    const results: unknown[] = [];
    for (const { entry, where, values } of resolved) results.push(await runOne(trx, entry, where, values));
    return results;
  };
  let results: unknown[];
  try {
    const [only] = resolved;
    if (resolved.length === 1 && only!.entry.read && !Object.values(only!.where).some((value) => value === null || value === NOT_CONVERTIBLE)) {
      results = [await only!.entry.read.all(only!.entry.where.map(({ column }) => only!.where[column]))];
    } else {
      results =
        resolved.length === 1 && only!.entry.query.op === 'select' ? await runAll(db) : await db.transaction((trx) => runAll(trx as unknown as Database));
    }
  } catch (err) {
    throw new GatewayError(500, 'internal_error', 'internal error', { cause: err });
  }
  if (prepared.length === 1) return results[0];
  return Object.fromEntries(prepared.map((entry, index) => [entry.query.name!, results[index]]));
}

const bindAll = (columns: ColumnValue[], context: RequestContext, label: string): Record<string, unknown> =>
  Object.fromEntries(columns.map((value) => [value.column, bindValue(value, context, label)]));

/** What a query whose where can match nothing (a context value not of its column's type) answers, without running. */
const NOTHING_MATCHED = { select: () => [], update: () => ({ affected: 0 }), delete: () => ({ affected: 0 }), insert: undefined };

async function runOne(db: Database, entry: PreparedQuery, where: Record<string, unknown>, values: Record<string, unknown>): Promise<unknown> {
  const { query } = entry;
  const nothing = NOTHING_MATCHED[query.op];
  if (nothing && Object.values(where).includes(NOT_CONVERTIBLE)) return nothing();
  // Strings compare byte for byte on both databases (core's whereExactly), in selects, updates and deletes.
  const matching = () => entry.where.reduce((builder, { column, type }) => whereExactly(builder, column, where[column], type), db(query.table));
  switch (query.op) {
    case 'select': {
      const builder = matching()
        .select(query.columns!)
        .limit(query.limit ?? DEFAULT_SELECT_LIMIT);
      for (const order of query.orderBy ?? []) builder.orderBy(order.replace(/^-/, ''), order.startsWith('-') ? 'desc' : 'asc');
      return builder;
    }
    case 'insert': {
      return { id: await insertReturningId(db, query.table, values, entry.generated) };
    }
    case 'update':
      return { affected: await matching().update(values) };
    case 'delete':
      return { affected: await matching().delete() };
  }
}

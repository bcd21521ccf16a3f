import { GatewayError, type Database, type PluginApi, type PreparedRead, type RequestContext } from '@tkgate/core';
import { parseValue, resolveValue, type BoundValue } from './bound-values.js';
import { DEFAULT_SELECT_LIMIT, type PseudoQuery, type Scalar } from './internal-config.js';

/** A query ready to run: its values parsed once at load, bound per request. */
export interface PreparedQuery {
  query: PseudoQuery;
  label: string;
  where: Array<[string, BoundValue]>;
  values: Array<[string, BoundValue]>;
  /** A select, compiled once with its where values as parameters (SQL NULL needs IS NULL, so not for nulls). */
  read?: PreparedRead;
}

export function prepareQueries(queries: PseudoQuery[], db: Database, prepareRead: PluginApi['prepareRead']): PreparedQuery[] {
  const bound = (map: Record<string, Scalar> | undefined) =>
    Object.entries(map ?? {}).map(([column, raw]) => [column, parseValue(raw) as BoundValue] as [string, BoundValue]);
  return queries.map((query, index) => {
    const where = bound(query.where);
    const entry: PreparedQuery = { query, label: `pseudo query ${query.name ?? index}`, where, values: bound(query.values) };
    if (query.op === 'select') {
      entry.read = prepareRead((param) => {
        const builder = db(query.table).select(query.columns!).limit(query.limit ?? DEFAULT_SELECT_LIMIT);
        where.forEach(([column], i) => builder.where(column, param(i)));
        for (const order of query.orderBy ?? []) builder.orderBy(order.replace(/^-/, ''), order.startsWith('-') ? 'desc' : 'asc');
        return builder;
      });
    }
    return entry;
  });
}

/**
 * Runs the queries in order, in one transaction (a single select needs none). Every value is bound
 * before the transaction starts, so a missing payload field writes nothing.
 */
export async function runQueries(db: Database, prepared: PreparedQuery[], context: RequestContext): Promise<unknown> {
  const resolved = prepared.map((entry) => ({
    entry,
    where: Object.fromEntries(entry.where.map(([column, value]) => [column, resolveValue(value, context, entry.label)])),
    values: Object.fromEntries(entry.values.map(([column, value]) => [column, resolveValue(value, context, entry.label)])),
  }));
  const runAll = async (trx: Database) => {
    const results: unknown[] = [];
    for (const { entry, where, values } of resolved) results.push(await runOne(trx, entry, where, values));
    return results;
  };
  let results: unknown[];
  try {
    const [only] = resolved;
    if (resolved.length === 1 && only!.entry.read && !Object.values(only!.where).includes(null)) {
      results = [await only!.entry.read.all(only!.entry.where.map(([column]) => only!.where[column]))];
    } else {
      results = resolved.length === 1 && only!.entry.query.op === 'select' ? await runAll(db) : await db.transaction((trx) => runAll(trx as unknown as Database));
    }
  } catch (err) {
    throw new GatewayError(500, 'internal_error', 'internal error', { cause: err });
  }
  if (prepared.length === 1) return results[0];
  return Object.fromEntries(prepared.map((entry, index) => [entry.query.name!, results[index]]));
}

async function runOne(db: Database, entry: PreparedQuery, where: Record<string, Scalar>, values: Record<string, Scalar>): Promise<unknown> {
  const { query } = entry;
  switch (query.op) {
    case 'select': {
      const builder = db(query.table).select(query.columns!).where(where).limit(query.limit ?? DEFAULT_SELECT_LIMIT);
      for (const order of query.orderBy ?? []) builder.orderBy(order.replace(/^-/, ''), order.startsWith('-') ? 'desc' : 'asc');
      return builder;
    }
    case 'insert': {
      const [id] = await db(query.table).insert(values);
      return { id: typeof id === 'object' && id !== null ? Object.values(id)[0] : id };
    }
    case 'update':
      return { affected: await db(query.table).where(where).update(values) };
    case 'delete':
      return { affected: await db(query.table).where(where).delete() };
  }
}

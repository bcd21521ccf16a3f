import {
  GatewayError,
  insertReturningId,
  NOT_CONVERTIBLE,
  textSearch,
  type Database,
  type DatabaseSchema,
  type PluginApi,
  type PreparedRead,
  type QueryBuilder,
  type RequestContext,
} from '@tkgate/core';
import { bindValue, parseValue, type BoundValue, type ColumnValue } from './bound-values.js';
import { applyCondition, boundValues, NOTHING, parseCondition, resolveCondition, type Condition, type Resolved } from './conditions.js';
import type { PseudoQuery, Scalar } from './internal-config.js';
import { applyOrder, pagedByRequest, preparePaging, resolveBound, resolveOrder, type Paging } from './paging.js';

/** A query ready to run: its conditions and values parsed and typed once at load, bound per request. */
export interface PreparedQuery {
  query: PseudoQuery;
  label: string;
  conditions: Condition[];
  values: ColumnValue[];
  /** The column PostgreSQL returns as an insert's id (DatabaseSchema.generatedColumn). */
  generated?: string;
  paging?: Paging;
  /**
   * A select's prepared reads, one per shape of request (which optional conditions are there, how many
   * items an `in` has, which order): compiled on first use and kept, at most MAX_SHAPES of them.
   */
  shapes?: Map<string, Shape>;
}

interface Shape {
  rows: PreparedRead;
  count?: PreparedRead;
}

/** Beyond this many shapes of one select (an `in` of ever new lengths), requests build their SQL each time. */
const MAX_SHAPES = 64;

/** A query for one request: its conditions resolved, its values bound, its page chosen. */
interface Bound {
  entry: PreparedQuery;
  conditions: Resolved[];
  values: Record<string, unknown>;
  order: number;
  limit: number;
  offset: number;
}

/** `schema` is the one the endpoint was checked against: it gives each column's type. */
export function prepareQueries(queries: PseudoQuery[], schema: DatabaseSchema): PreparedQuery[] {
  return queries.map((query, index) => {
    const conditions = Object.entries(query.where ?? {}).map(([column, raw]) => {
      // The load-time check has refused conditions that do not parse and literals that do not convert.
      const condition = parseCondition(column, raw, schema.columnType(query.table, column)) as Condition;
      return { ...condition, value: condition.value && literal(condition.value, condition), items: condition.items?.map((item) => literal(item, condition)) };
    });
    const values = Object.entries(query.values ?? {}).map(([column, raw]) => {
      const type = schema.columnType(query.table, column);
      const value = parseValue(raw) as BoundValue;
      return { column, type, value: 'literal' in value ? { literal: type.convert(value.literal) as Scalar } : value };
    });
    const entry: PreparedQuery = { query, label: `pseudo query ${query.name ?? index}`, conditions, values };
    if (query.op === 'insert') entry.generated = schema.generatedColumn(query.table);
    if (query.op === 'select') {
      entry.paging = preparePaging(query, schema);
      entry.shapes = new Map();
    }
    return entry;
  });
}

/** A literal converted once to its column's type (a search text stays text). */
const literal = (value: BoundValue, condition: Condition): BoundValue =>
  'literal' in value && !condition.search ? { literal: condition.type.convert(value.literal) as Scalar } : value;

/**
 * Runs the queries in order, in one transaction (a single select needs none). Every value is bound and
 * converted before the transaction starts, so a missing or mistyped payload field writes nothing.
 */
export async function runQueries(db: Database, prepared: PreparedQuery[], context: RequestContext, prepareRead: PluginApi['prepareRead']): Promise<unknown> {
  const bound = prepared.map((entry) => bind(entry, context));
  for (const { entry, values } of bound) {
    const column = entry.values.find((value) => values[value.column] === NOT_CONVERTIBLE);
    if (column)
      throw new GatewayError(500, 'internal_error', 'internal error', {
        cause: new Error(`${entry.label}: the value for ${entry.query.table}.${column.column} is not ${column.type.expected}`),
      });
  }
  const runAll = async (trx: Database) => {
    const results: unknown[] = [];
    for (const one of bound) results.push(await runOne(trx, one));
    return results;
  };
  let results: unknown[];
  try {
    const [only] = bound;
    if (bound.length === 1 && only!.entry.shapes) results = [await runPrepared(db, only!, prepareRead)];
    else results = await db.transaction((trx) => runAll(trx as unknown as Database));
  } catch (err) {
    throw new GatewayError(500, 'internal_error', 'internal error', { cause: err });
  }
  if (prepared.length === 1) return results[0];
  return Object.fromEntries(prepared.map((entry, index) => [entry.query.name!, results[index]]));
}

const NO_VALUES: Readonly<Record<string, unknown>> = Object.freeze({});

function bind(entry: PreparedQuery, context: RequestContext): Bound {
  const { paging, label } = entry;
  return {
    entry,
    conditions: entry.conditions.map((condition) => resolveCondition(condition, context, label)),
    values: entry.values.length === 0 ? NO_VALUES : Object.fromEntries(entry.values.map((value) => [value.column, bindValue(value, context, label)])),
    order: paging ? resolveOrder(paging, context) : 0,
    limit: paging ? resolveBound(paging.limit, context) : 0,
    offset: paging ? resolveBound(paging.offset, context) : 0,
  };
}

const matchesNothing = (bound: Bound) => bound.conditions.includes(NOTHING);

/** What a query whose where can match nothing (an empty `in`, a context value not of its column's type) answers, without running. */
function nothingMatched({ entry }: Bound): unknown {
  switch (entry.query.op) {
    case 'select':
      return entry.query.count ? { rows: [], count: 0 } : [];
    case 'insert':
      return undefined;
    default:
      return { affected: 0 };
  }
}

/** A lone select: its shape's prepared reads (compiled once, cached on SQLite until anyone commits). */
async function runPrepared(db: Database, bound: Bound, prepareRead: PluginApi['prepareRead']): Promise<unknown> {
  if (matchesNothing(bound)) return nothingMatched(bound);
  const { entry } = bound;
  // The shape's key and the values to bind, in one pass (this runs on every request).
  const search = textSearch(db);
  const params: unknown[] = [];
  let key = '';
  bound.conditions.forEach((resolved, index) => {
    if (typeof resolved === 'symbol') {
      key += '-,';
      return;
    }
    key += `${resolved.shape},`;
    params.push(...boundValues(entry.conditions[index]!, resolved.values, search));
  });
  key += bound.order;
  let shape = entry.shapes!.get(key);
  if (!shape && entry.shapes!.size >= MAX_SHAPES) return runOne(db, bound);
  if (!shape) entry.shapes!.set(key, (shape = prepareShape(db, bound, prepareRead)));
  const rows = await shape.rows.all(pagedByRequest(entry.paging!) ? [...params, bound.limit, bound.offset] : params);
  if (!shape.count) return rows;
  const [counted] = await shape.count.all(params);
  return { rows, count: Number(counted!.count) };
}

function prepareShape(db: Database, bound: Bound, prepareRead: PluginApi['prepareRead']): Shape {
  const { entry } = bound;
  const paging = entry.paging!;
  const paged = pagedByRequest(paging);
  // The stand-ins of the values, numbered in the order runPrepared gives them.
  const matching = (param: (index: number) => string) => {
    let next = 0;
    return whereOf(db(entry.query.table), bound, (values) => values.map(() => param(next++)));
  };
  const valueCount = bound.conditions.reduce((sum: number, resolved) => sum + (typeof resolved === 'symbol' ? 0 : resolved.values.length), 0);
  const rows = prepareRead(
    (param) => {
      const builder = applyOrder(matching(param).select(entry.query.columns!), paging.orders[bound.order]!);
      return paged ? builder : builder.limit(bound.limit).offset(bound.offset);
    },
    { cached: true, ...(paged ? { page: { limit: valueCount, offset: valueCount + 1 } } : {}) },
  );
  if (!entry.query.count) return { rows };
  return { rows, count: prepareRead((param) => matching(param).count({ count: '*' }), { cached: true }) };
}

/** Adds the request's conditions to `builder`; `valuesOf` gives what to bind for each (the values, or stand-ins). */
function whereOf(builder: QueryBuilder, bound: Bound, valuesOf: (values: readonly unknown[]) => readonly unknown[]): QueryBuilder {
  const search = textSearch(builder);
  bound.conditions.forEach((resolved, index) => {
    if (typeof resolved === 'symbol') return;
    const condition = bound.entry.conditions[index]!;
    applyCondition(builder, condition, resolved.shape, valuesOf(boundValues(condition, resolved.values, search)));
  });
  return builder;
}

async function runOne(db: Database, bound: Bound): Promise<unknown> {
  if (matchesNothing(bound) && bound.entry.query.op !== 'insert') return nothingMatched(bound);
  const { entry, values } = bound;
  const { query } = entry;
  // Strings compare byte for byte on every database (core's whereExactly), in selects, updates and deletes.
  const matching = () => whereOf(db(query.table), bound, (bound) => bound);
  switch (query.op) {
    case 'select': {
      const rows = await applyOrder(matching().select(query.columns!), entry.paging!.orders[bound.order]!).limit(bound.limit).offset(bound.offset);
      if (!query.count) return rows;
      const [counted] = await matching().count({ count: '*' });
      return { rows, count: Number((counted as { count: unknown }).count) };
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

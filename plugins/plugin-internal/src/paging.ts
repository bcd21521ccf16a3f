import { invalidPayload, orderExactly, type ColumnType, type DatabaseSchema, type QueryBuilder, type RequestContext } from '@tkgate/core';
import { parseValue } from './bound-values.js';
import { DEFAULT_SELECT_LIMIT, MAX_SELECT_LIMIT, type OrderChoice, type PageChoice, type PseudoQuery } from './internal-config.js';

/**
 * A select's order, limit and offset: fixed by configuration, or chosen per request by a payload field
 * within the bounds configuration sets (`limit: { from: $payload.limit, max: 200, default: 50 }`,
 * `order_by: { from: $payload.sort, allowed: [name, created_at], default: name }`). The payload names an
 * order column as `name` (ascending) or `-name` (descending).
 */
export type PageBound = { fixed: number } | { field: string; max?: number; fallback: number };

export interface OrderEntry {
  column: string;
  direction: 'asc' | 'desc';
  type: ColumnType;
}

export interface Paging {
  limit: PageBound;
  offset: PageBound;
  /** The orders a request may get: one when fixed; each allowed column ascending then descending when chosen. */
  orders: OrderEntry[][];
  choice?: { field: string; allowed: readonly string[]; fallback: number };
}

/** `name` or `-name`. */
export const orderEntry = (entry: string) => ({ column: entry.replace(/^-/, ''), direction: entry.startsWith('-') ? ('desc' as const) : ('asc' as const) });

/** The `$payload.<field>` a `from` names, or undefined when it names none. */
export function fromField(from: string): string | undefined {
  const value = parseValue(from);
  return 'source' in value && value.source === 'payload' ? value.field : undefined;
}

function pageBound(bound: number | PageChoice | undefined, fallback: number, defaultMax?: number): PageBound {
  if (bound === undefined || typeof bound === 'number') return { fixed: bound ?? fallback };
  const max = bound.max ?? defaultMax;
  return { field: fromField(bound.from)!, max, fallback: Math.min(bound.default ?? fallback, max ?? Infinity) };
}

/** Paging of a select that passed the load-time check (every `from` a payload reference, every column there). */
export function preparePaging(query: PseudoQuery, schema: DatabaseSchema): Paging {
  const entry = (text: string): OrderEntry => {
    const { column, direction } = orderEntry(text);
    return { column, direction, type: schema.columnType(query.table, column) };
  };
  const paging: Paging = { limit: pageBound(query.limit, DEFAULT_SELECT_LIMIT, MAX_SELECT_LIMIT), offset: pageBound(query.offset, 0), orders: [] };
  const order = query.orderBy;
  if (order === undefined || Array.isArray(order)) {
    paging.orders.push((order ?? []).map(entry));
    return paging;
  }
  const choice = order as OrderChoice;
  for (const column of choice.allowed) paging.orders.push([entry(column)], [entry(`-${column}`)]);
  paging.choice = { field: fromField(choice.from)!, allowed: choice.allowed, fallback: orderIndex(choice.allowed, choice.default ?? choice.allowed[0]!)! };
  return paging;
}

/** The index in `orders` of `name` / `-name` among the allowed columns, or undefined. */
function orderIndex(allowed: readonly string[], text: string): number | undefined {
  const { column, direction } = orderEntry(text);
  const index = allowed.indexOf(column);
  return index < 0 ? undefined : 2 * index + (direction === 'desc' ? 1 : 0);
}

const payloadOf = (context: RequestContext) => context.payload as Record<string, unknown>;

/** The order this request asked for (an index into `orders`); a column not allowed is the client's mistake. */
export function resolveOrder(paging: Paging, context: RequestContext): number {
  const choice = paging.choice;
  if (!choice) return 0;
  const asked = payloadOf(context)[choice.field];
  if (asked === undefined) return choice.fallback;
  const index = typeof asked === 'string' ? orderIndex(choice.allowed, asked) : undefined;
  if (index === undefined) {
    throw invalidPayload([
      { field: choice.field, rule: 'allowed_values', message: `${choice.field} must be one of ${choice.allowed.join(', ')} (or -column for descending)` },
    ]);
  }
  return index;
}

const WHOLE = /^(?:0|[1-9][0-9]{0,14})$/;

/** A limit or offset for this request: a whole number from 0 to its max. */
export function resolveBound(bound: PageBound, context: RequestContext): number {
  if ('fixed' in bound) return bound.fixed;
  const asked = payloadOf(context)[bound.field];
  if (asked === undefined) return bound.fallback;
  const value = typeof asked === 'number' ? asked : typeof asked === 'string' && WHOLE.test(asked) ? Number(asked) : NaN;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw invalidPayload([{ field: bound.field, rule: 'type', message: `${bound.field} must be a whole number, at least 0` }]);
  }
  if (bound.max !== undefined && value > bound.max) {
    throw invalidPayload([{ field: bound.field, rule: 'max', message: `${bound.field} must be at most ${bound.max}` }]);
  }
  return value;
}

/** Whether limit or offset change per request (then they are bound values, not part of the SQL). */
export const pagedByRequest = (paging: Paging): boolean => !('fixed' in paging.limit) || !('fixed' in paging.offset);

export function applyOrder(builder: QueryBuilder, order: readonly OrderEntry[]): QueryBuilder {
  for (const { column, direction, type } of order) orderExactly(builder, column, direction, type);
  return builder;
}

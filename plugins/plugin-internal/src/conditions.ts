import {
  GatewayError,
  NOT_CONVERTIBLE,
  invalidPayload,
  textSearch,
  whereCompared,
  whereInExactly,
  type ColumnType,
  type Comparison,
  type RequestContext,
  type QueryBuilder,
  type SearchMode,
} from '@tkgate/core';
import { bindValue, parseValue, resolveList, type BoundValue } from './bound-values.js';
import { MAX_IN_ITEMS, MAX_SEARCH_LENGTH, operatorOf, type Operator, type Scalar, type WhereValue } from './internal-config.js';

/**
 * One condition of a where, parsed once at load: `column: value` (equality) or an operator object
 * (`{ ">=": $payload.min, optional: true }`, `{ in: [...] }`, `{ like: { prefix: ... } }`, `{ is_null: true }`).
 * Per request it resolves to the values it binds and a shape: the SQL it needs, which is the same for every
 * request of that shape, so a prepared read per shape serves them all.
 */
export interface Condition {
  column: string;
  operator: Operator;
  type: ColumnType;
  /** The value of a comparison or a search; for `in`, a reference to a list. */
  value?: BoundValue;
  /** The items of a literal `in` list. */
  items?: BoundValue[];
  search?: SearchMode;
  isNull?: boolean;
  optional: boolean;
}

/** A condition for a request: left out, matching no row, or its SQL's shape and the values it binds. */
export type Resolved = typeof DROPPED | typeof NOTHING | { shape: string; values: unknown[] };
export const DROPPED = Symbol('dropped');
export const NOTHING = Symbol('matches nothing');

/** The condition of a where entry, or why it cannot be one. */
export function parseCondition(column: string, raw: WhereValue, type: ColumnType): Condition | { problem: string } {
  const operator = operatorOf(raw);
  const base = { column, operator, type, optional: raw !== null && typeof raw === 'object' && raw.optional === true };
  const parsed = (value: Scalar): BoundValue | { problem: string } => parseValue(value);
  if (raw === null || typeof raw !== 'object') return withValue(base, parsed(raw));
  switch (operator) {
    case 'is_null':
      return { ...base, isNull: raw.is_null! };
    case 'like': {
      const search: SearchMode = raw.like!.prefix !== undefined ? 'prefix' : 'contains';
      return withValue({ ...base, search }, parsed(raw.like![search]!));
    }
    case 'in': {
      const list = raw.in!;
      if (typeof list === 'string') return withValue(base, parsed(list));
      const items = list.map(parsed);
      const bad = items.find((item) => 'problem' in item);
      return bad && 'problem' in bad ? bad : { ...base, items: items as BoundValue[] };
    }
    default:
      return withValue(base, parsed(raw[operator]!));
  }
}

const withValue = (condition: Condition, value: BoundValue | { problem: string }): Condition | { problem: string } =>
  'problem' in value ? value : { ...condition, value };

/** The references a condition reads (for checks and the OpenAPI description). */
export const referencesOf = (condition: Condition): BoundValue[] => [...(condition.value ? [condition.value] : []), ...(condition.items ?? [])];

/** Whether a payload reference of the condition is absent from this request. */
const absent = (value: BoundValue | undefined, context: RequestContext): boolean =>
  value !== undefined && 'source' in value && value.source === 'payload' && (context.payload as Record<string, unknown>)[value.field] === undefined;

export function resolveCondition(condition: Condition, context: RequestContext, usedBy: string): Resolved {
  const { operator, value, type } = condition;
  if (condition.optional && absent(value, context)) return DROPPED;
  switch (operator) {
    case 'is_null':
      return { shape: 'v', values: [] };
    case 'in': {
      const items = condition.items
        ? condition.items.map((item) => bindValue({ column: condition.column, value: item, type }, context, usedBy))
        : resolveList(value!, context, usedBy, MAX_IN_ITEMS).map((item) => convertItem(item, condition, usedBy));
      const bound = items.filter((item) => item !== NOT_CONVERTIBLE);
      return bound.length === 0 ? NOTHING : { shape: `i${bound.length}`, values: bound };
    }
    case 'like': {
      const text = bindValue({ column: condition.column, value: value!, type }, context, usedBy);
      if (text === null || text === NOT_CONVERTIBLE) return NOTHING;
      const search = String(text);
      if (search.length > MAX_SEARCH_LENGTH) throw searchTooLong(value!, usedBy);
      return { shape: 'v', values: [search] };
    }
    default: {
      const bound = bindValue({ column: condition.column, value: value!, type }, context, usedBy);
      if (bound === NOT_CONVERTIBLE) return NOTHING;
      if (bound === null) return operator === '=' || operator === '!=' ? { shape: 'n', values: [] } : NOTHING;
      return { shape: 'v', values: [bound] };
    }
  }
}

/** A search text past MAX_SEARCH_LENGTH: the client's mistake when it came from the request (400), else the gateway's. */
function searchTooLong(value: BoundValue, usedBy: string): GatewayError {
  const source = 'source' in value ? value.source : 'literal';
  const field = source === 'path' ? `path.${(value as { field: string }).field}` : 'field' in value ? value.field : 'search';
  const problem = { field, rule: 'max_length', message: `${field} must be at most ${MAX_SEARCH_LENGTH} characters for ${usedBy}` };
  if (source === 'payload' || source === 'path') return invalidPayload([problem]);
  return new GatewayError(500, 'internal_error', 'internal error', { cause: new Error(`$${source}.${field}: ${problem.message}`) });
}

/** An item of a payload list, as the column's type: one that does not convert is the client's mistake. */
function convertItem(item: unknown, condition: Condition, usedBy: string): unknown {
  const converted = item !== null && typeof item === 'object' ? NOT_CONVERTIBLE : condition.type.convert(item);
  if (converted === NOT_CONVERTIBLE && condition.value && 'source' in condition.value && condition.value.source === 'payload') {
    const field = condition.value.field;
    throw invalidPayload([{ field, rule: 'type', message: `every item of ${field} must be ${condition.type.expected} for ${usedBy}` }]);
  }
  return converted;
}

/**
 * Adds the condition in its resolved shape; `values` are the bound values, or a prepared read's parameter
 * stand-ins. A search value is turned into the database's pattern by `pattern` first (see patternOf).
 */
export function applyCondition(builder: QueryBuilder, condition: Condition, shape: string, values: readonly unknown[]): QueryBuilder {
  const { column, operator, type } = condition;
  switch (operator) {
    case 'is_null':
      return condition.isNull ? builder.whereNull(column) : builder.whereNotNull(column);
    case 'in':
      return whereInExactly(builder, column, values, type);
    case 'like':
      return textSearch(builder).where(builder, column, values[0]);
    default:
      if (shape === 'n') return operator === '=' ? builder.whereNull(column) : builder.whereNotNull(column);
      return whereCompared(builder, column, operator as Comparison, values[0], type);
  }
}

/** The bound values of a resolved condition as the database reads them: a search text becomes its pattern. */
export function boundValues(condition: Condition, values: readonly unknown[], search: ReturnType<typeof textSearch>): readonly unknown[] {
  return condition.search ? [search.pattern(condition.search, values[0] as string)] : values;
}

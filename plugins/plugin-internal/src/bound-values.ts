import { GatewayError, NOT_CONVERTIBLE, invalidPayload, type CheckEnvironment, type ColumnType, type RequestContext } from '@tkgate/core';
import type { Scalar } from './internal-config.js';

/**
 * Values in pseudo queries: a literal, or a reference bound at request time:
 *   $payload.<field>      the filtered payload
 *   $context.<field>      a top-level field of the request context (after overwrite_wrapping)
 *   $db_context.<key>     a value fetched by inject_db_context
 *   $path.<name>          a path parameter of a template endpoint (`*`: a wildcard's rest)
 * References are always bound parameters, never part of the SQL text. Every value is converted to the type of
 * the column it is compared with or stored into (ColumnType in @tkgate/core): literals at load, references
 * per request.
 */
type Source = 'payload' | 'context' | 'db_context' | 'path';
export type BoundValue = { literal: Scalar } | { source: Source; field: string };

const REFERENCE = /^\$(?:(payload|context|db_context)\.([A-Za-z_][A-Za-z0-9_]*)|(path)\.([A-Za-z_][A-Za-z0-9_]*|\*))$/;
/** Where each source's values are in the request context. */
const HOLDER = { payload: 'payload', db_context: 'db_context', path: 'path_params' } as const;

export function parseValue(value: Scalar): BoundValue | { problem: string } {
  if (typeof value !== 'string' || !value.startsWith('$')) return { literal: value };
  const match = REFERENCE.exec(value);
  if (!match) return { problem: `${value} is not a reference: use $payload.<field>, $context.<field>, $db_context.<key> or $path.<name>` };
  return { source: (match[1] ?? match[3]) as Source, field: (match[2] ?? match[4])! };
}

/** Why a reference can never have a value for this endpoint, or undefined when it can. */
export function unreachable(value: BoundValue, env: CheckEnvironment): string | undefined {
  if ('literal' in value) return undefined;
  const { source, field } = value;
  if (source === 'context') return env.contextFields.has(field) ? undefined : `the request context has no field ${field}`;
  if (source === 'path') return env.pathParams?.has(field) ? undefined : `the endpoint's path has no parameter ${field}`;
  if (!env.contextFields.has(source)) return `${source} was removed by overwrite_wrapping`;
  if (source === 'db_context') return env.dbContextKeys.has(field) ? undefined : `db_context has no key ${field}`;
  if (env.payloadFields && !env.payloadFields.has(field)) return `${field} is not in client_filter.allowed_fields, so it would always be absent`;
  return undefined;
}

/** The value to bind. An absent payload field is the client's mistake (400); anything not a scalar cannot be bound. */
export function resolveValue(value: BoundValue, context: RequestContext, usedBy: string): Scalar {
  if ('literal' in value) return value.literal;
  const holder = value.source === 'context' ? context : ((context[HOLDER[value.source]] ?? {}) as Record<string, unknown>);
  const resolved = holder[value.field];
  if (resolved === undefined) {
    if (value.source === 'payload') {
      throw invalidPayload([{ field: value.field, rule: 'required', message: `${value.field} is needed by ${usedBy}` }]);
    }
    return null;
  }
  if (resolved !== null && typeof resolved === 'object') {
    if (value.source === 'payload') {
      throw invalidPayload([{ field: value.field, rule: 'type', message: `${value.field} must be a single value for ${usedBy}` }]);
    }
    throw new GatewayError(500, 'internal_error', 'internal error', { cause: new Error(`$${value.source}.${value.field} is not a single value (${usedBy})`) });
  }
  return resolved as Scalar;
}

/**
 * The list an `in` reads from a reference: an array of at most `max` items (a single value is a list of one;
 * a GET's repeated query parameter arrives as an array). Too many items is the client's mistake (400).
 */
export function resolveList(value: BoundValue, context: RequestContext, usedBy: string, max: number): unknown[] {
  if ('literal' in value) return [value.literal];
  const holder = value.source === 'context' ? context : (context[value.source] as Record<string, unknown>);
  const resolved = holder[value.field];
  if (resolved === undefined && value.source === 'payload') {
    throw invalidPayload([{ field: value.field, rule: 'required', message: `${value.field} is needed by ${usedBy}` }]);
  }
  const list = Array.isArray(resolved) ? resolved : resolved === undefined ? [] : [resolved];
  if (list.length > max) {
    const problem = { field: value.field, rule: 'max_length', message: `${value.field} may hold at most ${max} items for ${usedBy}` };
    if (value.source === 'payload') throw invalidPayload([problem]);
    throw new GatewayError(500, 'internal_error', 'internal error', { cause: new Error(`$${value.source}.${value.field}: ${problem.message}`) });
  }
  return list;
}

/** A value for one column: what to bind, and the column's type it is converted to. */
export interface ColumnValue {
  column: string;
  value: BoundValue;
  type: ColumnType;
}

/** Why a literal cannot go into its column, or undefined when it converts. */
export function literalProblem({ value, type, column }: ColumnValue, table: string): string | undefined {
  if (!('literal' in value) || type.convert(value.literal) !== NOT_CONVERTIBLE) return undefined;
  return `${JSON.stringify(value.literal)} is not ${type.expected}, the type of ${table}.${column}`;
}

/**
 * The value to bind, as the column's type. A payload value that does not convert is the client's mistake
 * (400); for a context or db_context value NOT_CONVERTIBLE comes back (a where then matches nothing).
 */
export function bindValue({ value, type }: ColumnValue, context: RequestContext, usedBy: string): unknown {
  const converted = type.convert(resolveValue(value, context, usedBy));
  if (converted === NOT_CONVERTIBLE && 'source' in value && (value.source === 'payload' || value.source === 'path')) {
    const field = value.source === 'path' ? `path.${value.field}` : value.field;
    throw invalidPayload([{ field, rule: 'type', message: `${field} must be ${type.expected} for ${usedBy}` }]);
  }
  return converted;
}

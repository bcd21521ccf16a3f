import type { JsonSchema, PayloadFields, ResponseDescription } from '@tkgate/core';
import { parseValue } from './bound-values.js';
import type { InternalConfig, PseudoQuery, Scalar } from './internal-config.js';
import { fromField } from './paging.js';

/** `data` of an internal endpoint, for the OpenAPI description: rows of a select, {id} of an insert, {affected} otherwise. */
export function describeInternalResponse(config: InternalConfig): ResponseDescription {
  const queries = config.pseudo_querys;
  if (!queries) return {};
  const data: JsonSchema =
    queries.length === 1 ? resultOf(queries[0]!) : { type: 'object', properties: Object.fromEntries(queries.map((query) => [query.name!, resultOf(query)])) };
  return { data };
}

function resultOf(query: PseudoQuery): JsonSchema {
  switch (query.op) {
    case 'select': {
      const rows: JsonSchema = {
        type: 'array',
        description: `Rows of ${query.table}.`,
        items: { type: 'object', properties: Object.fromEntries((query.columns ?? []).map((column) => [column, {}])) },
      };
      if (!query.count) return rows;
      return { type: 'object', properties: { rows, count: { type: 'integer', description: 'Every matching row, limit and offset aside.' } } };
    }
    case 'insert':
      return { type: 'object', description: `The new row of ${query.table}.`, properties: { id: { description: 'Its id.' } } };
    case 'update':
    case 'delete':
      return { type: 'object', description: `Rows of ${query.table} changed.`, properties: { affected: { type: 'integer' } } };
  }
}

/**
 * The payload fields the queries read: needed (a `$payload.<field>` of a condition or value: absent is 400)
 * and optional (an optional condition's, or a limit, offset or order the caller may choose).
 */
export function payloadFieldsOf(config: InternalConfig): PayloadFields {
  const needed = new Set<string>();
  const optional = new Set<string>();
  const add = (value: unknown, into: Set<string>) => {
    if (typeof value === 'string' && value.startsWith('$payload.')) {
      const parsed = parseValue(value);
      if ('source' in parsed) into.add(parsed.field);
    }
  };
  for (const query of config.pseudo_querys ?? []) {
    for (const value of Object.values(query.values ?? {})) add(value, needed);
    for (const raw of Object.values(query.where ?? {})) {
      if (raw === null || typeof raw !== 'object') add(raw, needed);
      else {
        const into = raw.optional ? optional : needed;
        const operands: unknown[] = [raw['>='], raw['<='], raw['>'], raw['<'], raw['!='], raw['='], raw.like?.prefix, raw.like?.contains];
        operands.push(...(Array.isArray(raw.in) ? (raw.in as Scalar[]) : [raw.in]));
        for (const operand of operands) add(operand, into);
      }
    }
    for (const choice of [query.limit, query.offset, query.orderBy]) {
      const from = choice !== null && typeof choice === 'object' && !Array.isArray(choice) ? fromField(choice.from) : undefined;
      if (from) optional.add(from);
    }
  }
  return { needed: [...needed], optional: [...optional].filter((field) => !needed.has(field)) };
}

import type { JsonSchema, ResponseDescription } from '@tkgate/core';
import type { InternalConfig, PseudoQuery } from './internal-config.js';

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
    case 'select':
      return {
        type: 'array',
        description: `Rows of ${query.table}.`,
        items: { type: 'object', properties: Object.fromEntries((query.columns ?? []).map((column) => [column, {}])) },
      };
    case 'insert':
      return { type: 'object', description: `The new row of ${query.table}.`, properties: { id: { description: 'Its id.' } } };
    case 'update':
    case 'delete':
      return { type: 'object', description: `Rows of ${query.table} changed.`, properties: { affected: { type: 'integer' } } };
  }
}

import { CORE_TABLES, unreadable, type CheckEnvironment, type ConfigIssue, type DatabaseSchema } from '@tkgate/core';
import { literalProblem, parseValue, unreachable } from './bound-values.js';
import type { InternalConfig, PseudoQuery } from './internal-config.js';

/**
 * Load-time checks of an internal endpoint: every table and column exists in the live schema and may be
 * used that way (no secret ever read, no tkgate table ever written), every reference can have a value,
 * every literal converts to its column's type, every handler is registered, and several queries have
 * distinct names.
 */
export function checkInternalEndpoint(config: InternalConfig, env: CheckEnvironment): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (config.handler !== undefined) {
    if (!env.functions.has(config.handler)) {
      issues.push({ path: ['handler'], message: `no function named ${config.handler} is registered (registered: ${[...env.functions].join(', ') || 'none'})` });
    }
    return issues;
  }
  const queries = config.pseudo_querys ?? [];
  const names = new Set<string>();
  queries.forEach((query, index) => {
    const at: Array<string | number> = ['pseudo_querys', index];
    if (queries.length > 1) {
      if (!query.name) issues.push({ path: [...at, 'name'], message: 'several queries need a name each (data is keyed by name)' });
      else if (names.has(query.name)) issues.push({ path: [...at, 'name'], message: `the name ${query.name} is used twice` });
      else names.add(query.name);
    }
    issues.push(...checkQuery(query, env, at));
  });
  return issues;
}

function checkQuery(query: PseudoQuery, env: CheckEnvironment, at: Array<string | number>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const tableProblem = query.op === 'select' ? unreadable(env.schema, query.table) : unwritable(env.schema, query.table);
  if (tableProblem) return [{ path: [...at, query.op], message: tableProblem }];

  const readable = (column: string, path: Array<string | number>) => {
    const problem = unreadable(env.schema, query.table, column);
    if (problem) issues.push({ path, message: problem });
  };
  for (const [index, column] of (query.columns ?? []).entries()) readable(column, [...at, 'columns', index]);
  for (const [index, entry] of (query.orderBy ?? []).entries()) readable(entry.replace(/^-/, ''), [...at, 'order_by', index]);
  const valueKey = query.op === 'update' ? 'set' : 'values';
  for (const [key, map] of [
    ['where', query.where],
    [valueKey, query.values],
  ] as const) {
    for (const [column, raw] of Object.entries(map ?? {})) {
      readable(column, [...at, key, column]);
      const value = parseValue(raw);
      const problem =
        'problem' in value
          ? value.problem
          : (unreachable(value, env) ?? literalProblem({ column, value, type: env.schema.columnType(query.table, column) }, query.table));
      if (problem) issues.push({ path: [...at, key, column], message: problem });
    }
  }
  return issues;
}

function unwritable(schema: DatabaseSchema, table: string): string | undefined {
  if (CORE_TABLES.has(table)) return `table ${table} belongs to tkgate and is never written through configuration`;
  return unreadable(schema, table);
}

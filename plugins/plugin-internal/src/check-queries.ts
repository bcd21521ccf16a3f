import { CORE_TABLES, unreadable, type CheckEnvironment, type ConfigIssue, type DatabaseSchema } from '@tkgate/core';
import { literalProblem, parseValue, unreachable, type BoundValue } from './bound-values.js';
import { parseCondition, referencesOf } from './conditions.js';
import type { InternalConfig, PageChoice, PseudoQuery } from './internal-config.js';
import { fromField, orderEntry } from './paging.js';

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
    return !problem;
  };
  const reachable = (value: BoundValue, path: Array<string | number>) => {
    const problem = unreachable(value, env);
    if (problem) issues.push({ path, message: problem });
  };
  for (const [index, column] of (query.columns ?? []).entries()) readable(column, [...at, 'columns', index]);
  issues.push(...checkPaging(query, env, at, readable));

  for (const [column, raw] of Object.entries(query.where ?? {})) {
    const path = [...at, 'where', column];
    if (!readable(column, path)) continue;
    const type = env.schema.columnType(query.table, column);
    const condition = parseCondition(column, raw, type);
    if ('problem' in condition) {
      issues.push({ path, message: condition.problem });
      continue;
    }
    if (condition.search && type.kind !== 'text' && type.kind !== 'any') {
      issues.push({ path: [...path, 'like'], message: `like searches text: ${query.table}.${column} holds ${type.expected}` });
    }
    const references = referencesOf(condition);
    for (const value of references) reachable(value, path);
    if (condition.optional && !references.some((value) => 'source' in value && value.source === 'payload')) {
      issues.push({ path: [...path, 'optional'], message: 'optional leaves the condition out when its $payload.<field> is absent: this one has none' });
    }
    if (!condition.search) {
      for (const value of references) {
        const problem = literalProblem({ column, value, type }, query.table);
        if (problem) issues.push({ path, message: problem });
      }
    }
  }
  if ((query.op === 'update' || query.op === 'delete') && query.where) {
    const fixed = Object.values(query.where).some((raw) => raw === null || typeof raw !== 'object' || raw.optional !== true);
    if (!fixed)
      issues.push({ path: [...at, 'where'], message: `${query.op} needs at least one condition that is not optional (else it could touch every row)` });
  }
  if (query.values) {
    const key = query.op === 'update' ? 'set' : 'values';
    for (const [column, raw] of Object.entries(query.values)) {
      const path = [...at, key, column];
      if (!readable(column, path)) continue;
      const value = parseValue(raw);
      const problem =
        'problem' in value
          ? value.problem
          : (unreachable(value, env) ?? literalProblem({ column, value, type: env.schema.columnType(query.table, column) }, query.table));
      if (problem) issues.push({ path, message: problem });
    }
  }
  return issues;
}

/** order_by's columns (fixed or allowed), and every `from` a payload field that can reach the endpoint. */
function checkPaging(
  query: PseudoQuery,
  env: CheckEnvironment,
  at: Array<string | number>,
  readable: (column: string, path: Array<string | number>) => boolean,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const from = (text: string, path: Array<string | number>) => {
    const field = fromField(text);
    if (field === undefined) issues.push({ path, message: `${text} must be $payload.<field>` });
    else {
      const problem = unreachable({ source: 'payload', field }, env);
      if (problem) issues.push({ path, message: problem });
    }
  };
  const order = query.orderBy;
  if (Array.isArray(order)) order.forEach((entry, index) => readable(orderEntry(entry).column, [...at, 'order_by', index]));
  else if (order) {
    from(order.from, [...at, 'order_by', 'from']);
    order.allowed.forEach((column, index) => readable(column, [...at, 'order_by', 'allowed', index]));
    if (order.default !== undefined && !order.allowed.includes(orderEntry(order.default).column)) {
      issues.push({ path: [...at, 'order_by', 'default'], message: `${order.default} is not among allowed (${order.allowed.join(', ')})` });
    }
  }
  for (const key of ['limit', 'offset'] as const) {
    const bound = query[key];
    if (bound !== undefined && typeof bound === 'object') {
      from(bound.from, [...at, key, 'from']);
      const page = bound as PageChoice;
      if (page.default !== undefined && page.max !== undefined && page.default > page.max) {
        issues.push({ path: [...at, key, 'default'], message: `default ${page.default} is above max ${page.max}` });
      }
    }
  }
  return issues;
}

function unwritable(schema: DatabaseSchema, table: string): string | undefined {
  if (CORE_TABLES.has(table)) return `table ${table} belongs to tkgate and is never written through configuration`;
  return unreadable(schema, table);
}

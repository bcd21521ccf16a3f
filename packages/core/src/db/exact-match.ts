import type { Knex } from 'knex';
import type { ColumnType } from './column-types.js';
import { dialectOf } from './connect.js';

/**
 * `column = value` that compares strings byte for byte on every database, as usernames do (migration 002):
 * where a text column's collation would not (MySQL/MariaDB's case- and accent-insensitive PAD SPACE default,
 * PostgreSQL's CHAR(n) and nondeterministic collations), the dialect adds an exact comparison beside the plain
 * one, which keeps the column's index usable (db/dialects/). Other kinds (numbers, dates) compare as they are.
 */
export function whereExactly(builder: Knex.QueryBuilder, column: string, value: unknown, type: ColumnType): Knex.QueryBuilder {
  builder.where(column, value as Knex.Value);
  if (type.kind !== 'text' || value === null) return builder;
  dialectOf(builder).exactEquals(builder, column, value as Knex.Value);
  return builder;
}

export type Comparison = '=' | '!=' | '>' | '>=' | '<' | '<=';
const SQL_OPERATOR: Record<Comparison, string> = { '=': '=', '!=': '<>', '>': '>', '>=': '>=', '<': '<', '<=': '<=' };

/**
 * `column <op> value`, comparing text byte for byte on every database as whereExactly does (a collation would
 * put "alpha" = "Alpha" and "a" < "B"). A NULL column meets no comparison (SQL's rule, alike everywhere); `=` is
 * whereExactly.
 */
export function whereCompared(builder: Knex.QueryBuilder, column: string, op: Comparison, value: unknown, type: ColumnType): Knex.QueryBuilder {
  if (op === '=') return whereExactly(builder, column, value, type);
  const sql = SQL_OPERATOR[op];
  if (type.kind === 'text') return dialectOf(builder).compareText(builder, column, sql, value as Knex.Value);
  return builder.where(column, sql, value as Knex.Value);
}

/** `column IN (values)`, each compared as whereExactly compares. */
export function whereInExactly(builder: Knex.QueryBuilder, column: string, values: readonly unknown[], type: ColumnType): Knex.QueryBuilder {
  builder.whereIn(column, values as Knex.Value[]);
  if (type.kind === 'text') dialectOf(builder).exactIn(builder, column, values as Knex.Value[]);
  return builder;
}

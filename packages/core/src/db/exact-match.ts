import type { Knex } from 'knex';
import type { ColumnType } from './column-types.js';
import { dialectOf } from './connect.js';

/**
 * `column = value` that compares strings byte for byte on every database, as usernames do (migration 002).
 * SQLite compares bytes already. On MySQL/MariaDB a toolkit table's text column has the operator's
 * collation, by default case- and accent-insensitive and PAD SPACE ("Alpha " equals "alpha"): the
 * comparison of binary strings added beside it is exact. PostgreSQL's default collations compare exactly,
 * but a CHAR(n) column ignores trailing spaces and an operator may give a column a nondeterministic (ICU)
 * collation: the comparison of the value as text in the bytewise "C" collation beside it is exact. In
 * both, the plain comparison before it keeps the column's index usable. Other kinds (numbers, dates)
 * compare as they are.
 */
export function whereExactly(builder: Knex.QueryBuilder, column: string, value: unknown, type: ColumnType): Knex.QueryBuilder {
  builder.where(column, value as Knex.Value);
  if (type.kind !== 'text' || value === null) return builder;
  const dialect = dialectOf(builder);
  if (dialect === 'mysql') builder.whereRaw('CAST(?? AS BINARY) = CAST(? AS BINARY)', [column, value as Knex.Value]);
  else if (dialect === 'postgres') builder.whereRaw('CAST(?? AS TEXT) COLLATE "C" = CAST(? AS TEXT)', [column, value as Knex.Value]);
  return builder;
}

export type Comparison = '=' | '!=' | '>' | '>=' | '<' | '<=';
const SQL_OPERATOR: Record<Comparison, string> = { '=': '=', '!=': '<>', '>': '>', '>=': '>=', '<': '<', '<=': '<=' };

/**
 * `column <op> value`, comparing text byte for byte on every database as whereExactly does: MySQL/MariaDB
 * compare binary strings (their collation would put "alpha" = "Alpha" and "a" < "B"), PostgreSQL uses the
 * "C" collation (its default follows the locale), SQLite compares bytes already. A NULL column meets no
 * comparison (SQL's rule, alike everywhere); `=` is whereExactly.
 */
export function whereCompared(builder: Knex.QueryBuilder, column: string, op: Comparison, value: unknown, type: ColumnType): Knex.QueryBuilder {
  if (op === '=') return whereExactly(builder, column, value, type);
  const client = builder.client.config.client;
  const sql = SQL_OPERATOR[op];
  if (type.kind === 'text' && client === 'mysql2') return builder.whereRaw(`CAST(?? AS BINARY) ${sql} CAST(? AS BINARY)`, [column, value as Knex.Value]);
  if (type.kind === 'text' && client === 'pg') return builder.whereRaw(`?? COLLATE "C" ${sql} ?`, [column, value as Knex.Value]);
  return builder.where(column, sql, value as Knex.Value);
}

/** `column IN (values)`, each compared as whereExactly compares (on MySQL/MariaDB text, binary strings beside the plain IN). */
export function whereInExactly(builder: Knex.QueryBuilder, column: string, values: readonly unknown[], type: ColumnType): Knex.QueryBuilder {
  builder.whereIn(column, values as Knex.Value[]);
  if (type.kind === 'text' && builder.client.config.client === 'mysql2') {
    builder.whereRaw(`CAST(?? AS BINARY) IN (${values.map(() => 'CAST(? AS BINARY)').join(', ')})`, [column, ...(values as Knex.Value[])]);
  }
  return builder;
}

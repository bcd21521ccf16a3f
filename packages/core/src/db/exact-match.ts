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

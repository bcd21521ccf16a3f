import type { Knex } from 'knex';
import type { ColumnType } from './column-types.js';

/**
 * `column = value` that compares strings byte for byte on every database, as usernames do (migration 002).
 * SQLite compares bytes already. On MySQL/MariaDB a toolkit table's text column has the operator's
 * collation, by default case- and accent-insensitive and PAD SPACE ("Alpha " equals "alpha"): the
 * comparison of binary strings added beside it is exact, and the plain one before it keeps the column's
 * index usable. Other kinds (numbers, dates) compare as they are.
 */
export function whereExactly(builder: Knex.QueryBuilder, column: string, value: unknown, type: ColumnType): Knex.QueryBuilder {
  builder.where(column, value as Knex.Value);
  if (type.kind === 'text' && value !== null && builder.client.config.client === 'mysql2') {
    builder.whereRaw('CAST(?? AS BINARY) = CAST(? AS BINARY)', [column, value as Knex.Value]);
  }
  return builder;
}

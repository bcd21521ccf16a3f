import type { Knex } from 'knex';
import type { ColumnType } from './column-types.js';
import { dialectOf } from './connect.js';

/**
 * ORDER BY that sorts alike on every database: NULL as the smallest value (first ascending, last descending,
 * as SQLite and MySQL/MariaDB do; PostgreSQL is told), and text byte for byte, as SQLite does (a collation
 * would sort case-insensitively or by the locale), so an order agrees with whereCompared's `<` and `>`. On
 * MySQL/MariaDB that order cannot use an index on the text column.
 */
export function orderExactly(builder: Knex.QueryBuilder, column: string, direction: 'asc' | 'desc', type: ColumnType): Knex.QueryBuilder {
  return dialectOf(builder).orderBy(builder, column, direction, type.kind === 'text');
}

import type { Knex } from 'knex';
import type { ColumnType } from './column-types.js';

/**
 * ORDER BY that sorts alike on every database: NULL as the smallest value (first ascending, last
 * descending, as SQLite and MySQL/MariaDB do; PostgreSQL is told), and text byte for byte, as SQLite does
 * (MySQL/MariaDB's collation would sort case-insensitively, PostgreSQL's default follows the locale), so
 * an order agrees with whereCompared's `<` and `>`. On MySQL/MariaDB that order cannot use an index on the
 * text column.
 */
export function orderExactly(builder: Knex.QueryBuilder, column: string, direction: 'asc' | 'desc', type: ColumnType): Knex.QueryBuilder {
  const client = builder.client.config.client;
  if (client === 'pg') {
    const nulls = direction === 'asc' ? 'first' : 'last';
    if (type.kind === 'text') return builder.orderByRaw(`?? COLLATE "C" ${direction} nulls ${nulls}`, [column]);
    return builder.orderBy(column, direction, nulls);
  }
  if (client === 'mysql2' && type.kind === 'text') return builder.orderByRaw(`CAST(?? AS BINARY) ${direction}`, [column]);
  return builder.orderBy(column, direction);
}

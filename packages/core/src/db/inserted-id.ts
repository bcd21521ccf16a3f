import type { Knex } from 'knex';
import { dialectOf } from './connect.js';

/**
 * Inserts one row and resolves to the id the database generated for it: MySQL/MariaDB's insert id (0 when
 * the table generates none), SQLite's rowid, and on PostgreSQL, which reports none by itself, the
 * `generated` column (a serial or identity column) returned by the insert; 0 without one, as on MySQL.
 * Ids past 2^53 come back as exact text (PostgreSQL).
 */
export function insertReturningId(
  db: Knex | Knex.Transaction,
  table: string,
  row: Record<string, unknown>,
  generated: string | undefined = 'id',
): Promise<unknown> {
  return dialectOf(db).insertReturningId(db, table, row, generated);
}

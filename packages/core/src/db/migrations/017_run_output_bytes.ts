import type { Knex } from 'knex';
import { dialectOf } from '../connect.js';

/**
 * Run output as bytes: `run_output.data` holds each chunk's UTF-8 bytes. PostgreSQL's text refuses a NUL character,
 * so a chunk holding one (a command printing `\0`) failed to store and its output was dropped while the run ended
 * succeeded; bytes hold any character on every database. PostgreSQL's column becomes `bytea` (its rows re-encoded
 * as UTF-8), MariaDB's `MEDIUMBLOB` (its rows keep their utf8mb4 bytes). SQLite's column takes bytes as declared
 * (a value keeps its own type), so its rows stay as they are: text rows and byte rows are both read back as text
 * (run-store.ts).
 */
export async function up(db: Knex): Promise<void> {
  const dialect = dialectOf(db).name;
  if (dialect === 'postgres') await db.raw(`ALTER TABLE run_output ALTER COLUMN data TYPE bytea USING convert_to(data, 'UTF8')`);
  else if (dialect === 'mysql') await db.raw('ALTER TABLE run_output MODIFY data MEDIUMBLOB NOT NULL');
}

/** Back to text: a chunk holding a NUL cannot go back on PostgreSQL (the migration down fails there). */
export async function down(db: Knex): Promise<void> {
  const dialect = dialectOf(db).name;
  if (dialect === 'postgres') await db.raw(`ALTER TABLE run_output ALTER COLUMN data TYPE text USING convert_from(data, 'UTF8')`);
  else if (dialect === 'mysql') await db.raw('ALTER TABLE run_output MODIFY data MEDIUMTEXT CHARACTER SET utf8mb4 NOT NULL');
}

import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { Testbed } from './fixtures.js';

/**
 * Blocks writes to the `sessions` table from another connection until released, to make the gateway's
 * database writes slow on purpose: SQLite through a write transaction on the file, MariaDB and PostgreSQL
 * through row locks.
 */
export async function holdSessionsLock(bed: Testbed): Promise<() => Promise<void>> {
  if (bed.dbConfig.client === 'sqlite') return holdSqliteWriteLock(bed);
  if (bed.dbConfig.client === 'postgres') return holdPostgresTransaction(bed, 'SELECT token_hash FROM sessions FOR UPDATE');
  const connection = await mysql.createConnection(String(bed.dbConfig.url));
  await connection.query('START TRANSACTION');
  await connection.query('SELECT token_hash FROM sessions FOR UPDATE');
  return async () => {
    await connection.query('ROLLBACK');
    await connection.end();
  };
}

/**
 * A trigger `name` that makes every `event` (INSERT, UPDATE, DELETE) of `table` fail with `message`: SQLite's
 * RAISE(ABORT), MariaDB's SIGNAL, PostgreSQL's RAISE EXCEPTION (from a function of the same name). Resolves to
 * the way to drop it again. Names and messages are the tests' own literals.
 */
export async function failingTrigger(bed: Testbed, name: string, event: string, table: string, message: string): Promise<() => Promise<void>> {
  if (bed.dbConfig.client === 'sqlite') {
    await bed.db.raw(`CREATE TRIGGER ${name} BEFORE ${event} ON ${table} BEGIN SELECT RAISE(ABORT, '${message}'); END`);
    return async () => void (await bed.db.raw(`DROP TRIGGER IF EXISTS ${name}`));
  }
  if (bed.dbConfig.client === 'postgres') {
    await bed.db.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RAISE EXCEPTION ''${message}''; END'`);
    await bed.db.raw(`CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
    return async () => void (await bed.db.raw(`DROP TRIGGER IF EXISTS ${name} ON ${table}`));
  }
  await bed.db.raw(`CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '${message}'`);
  return async () => void (await bed.db.raw(`DROP TRIGGER IF EXISTS ${name}`));
}

/** Makes every UPDATE of `sessions` fail, the way a broken disk or lost connection would. */
export const failSessionUpdates = (bed: Testbed): Promise<() => Promise<void>> =>
  failingTrigger(bed, 'fail_session_update', 'UPDATE', 'sessions', 'session writes are broken');

/** SQLite's one write lock, taken by another connection: every write of the gateway waits for it. */
function holdSqliteWriteLock(bed: Testbed): () => Promise<void> {
  const connection = new Database(String(bed.dbConfig.filename));
  connection.exec('BEGIN IMMEDIATE');
  return async () => {
    connection.exec('ROLLBACK');
    connection.close();
  };
}

/** A PostgreSQL transaction on a connection of its own that ran `statement` (taking its locks), rolled back on release. */
async function holdPostgresTransaction(bed: Testbed, statement: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: String(bed.dbConfig.url) });
  client.on('error', () => undefined);
  await client.connect();
  await client.query('BEGIN');
  await client.query(statement);
  return async () => {
    await client.query('ROLLBACK');
    await client.end();
  };
}

/**
 * Blocks every write to `table` from another connection until released: SQLite's write lock, a MariaDB
 * table lock, a PostgreSQL EXCLUSIVE table lock (plain reads go on, as MariaDB's readers wait).
 */
export async function holdTableLock(bed: Testbed, table: string): Promise<() => Promise<void>> {
  if (bed.dbConfig.client === 'sqlite') return holdSqliteWriteLock(bed);
  if (bed.dbConfig.client === 'postgres') return holdPostgresTransaction(bed, `LOCK TABLE "${table}" IN EXCLUSIVE MODE`);
  const connection = await mysql.createConnection(String(bed.dbConfig.url));
  await connection.query(`LOCK TABLES \`${table}\` WRITE`);
  return async () => {
    await connection.query('UNLOCK TABLES');
    await connection.end();
  };
}

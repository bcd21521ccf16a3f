import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import type { Testbed } from './fixtures.js';

/**
 * Blocks writes to the `sessions` table from another connection until released, to make the gateway's
 * database writes slow on purpose: SQLite through a write transaction on the file, MariaDB through row locks.
 */
export async function holdSessionsLock(bed: Testbed): Promise<() => Promise<void>> {
  if (bed.dbConfig.client === 'sqlite') return holdSqliteWriteLock(bed);
  const connection = await mysql.createConnection(String(bed.dbConfig.url));
  await connection.query('START TRANSACTION');
  await connection.query('SELECT token_hash FROM sessions FOR UPDATE');
  return async () => {
    await connection.query('ROLLBACK');
    await connection.end();
  };
}

/** Makes every UPDATE of `sessions` fail, the way a broken disk or lost connection would. */
export async function failSessionUpdates(bed: Testbed): Promise<() => Promise<void>> {
  if (bed.dbConfig.client === 'sqlite') {
    await bed.db.raw("CREATE TRIGGER fail_session_update BEFORE UPDATE ON sessions BEGIN SELECT RAISE(ABORT, 'session writes are broken'); END");
  } else {
    await bed.db.raw(
      "CREATE TRIGGER fail_session_update BEFORE UPDATE ON sessions FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'session writes are broken'",
    );
  }
  return async () => {
    await bed.db.raw('DROP TRIGGER fail_session_update');
  };
}

/** SQLite's one write lock, taken by another connection: every write of the gateway waits for it. */
function holdSqliteWriteLock(bed: Testbed): () => Promise<void> {
  const connection = new Database(String(bed.dbConfig.filename));
  connection.exec('BEGIN IMMEDIATE');
  return async () => {
    connection.exec('ROLLBACK');
    connection.close();
  };
}

/** Blocks every write to `table` from another connection until released: SQLite's write lock, a MariaDB table lock. */
export async function holdTableLock(bed: Testbed, table: string): Promise<() => Promise<void>> {
  if (bed.dbConfig.client === 'sqlite') return holdSqliteWriteLock(bed);
  const connection = await mysql.createConnection(String(bed.dbConfig.url));
  await connection.query(`LOCK TABLES \`${table}\` WRITE`);
  return async () => {
    await connection.query('UNLOCK TABLES');
    await connection.end();
  };
}

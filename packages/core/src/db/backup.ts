import { existsSync } from 'node:fs';
import path from 'node:path';
import { dialectOf, type Database } from './connect.js';

/** What better-sqlite3's connection offers: SQLite's online backup API, page by page, writers keep going. */
interface SqliteConnection {
  backup(destination: string): Promise<unknown>;
}

/**
 * `tkgate backup FILE`: a consistent copy of the SQLite database while gateways keep serving (SQLite's
 * online backup, which a plain `cp` of a WAL database is not). MySQL/MariaDB and PostgreSQL have their own tools for that.
 */
export async function backupSqlite(db: Database, destination: string): Promise<string> {
  const dialect = dialectOf(db);
  if (dialect === 'mysql') {
    throw new Error('tkgate backup copies SQLite databases; for MySQL/MariaDB use mysqldump --single-transaction (docs/upgrading.md)');
  }
  if (dialect === 'postgres') {
    throw new Error('tkgate backup copies SQLite databases; for PostgreSQL use pg_dump --format=custom (docs/upgrading.md)');
  }
  const target = path.resolve(destination);
  if (existsSync(target)) throw new Error(`${target} exists: a backup never overwrites a file`);
  const connection = (await db.client.acquireConnection()) as SqliteConnection;
  try {
    await connection.backup(target);
  } finally {
    await db.client.releaseConnection(connection);
  }
  return target;
}

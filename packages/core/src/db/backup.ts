import path from 'node:path';
import { dialectOf, type Database } from './connect.js';

/**
 * `tkgate backup FILE`: a consistent copy of the SQLite database while gateways keep serving (SQLite's
 * online backup, which a plain `cp` of a WAL database is not); never over an existing file. MySQL/MariaDB
 * and PostgreSQL have their own tools for that, which the refusal names.
 */
export async function backupSqlite(db: Database, destination: string): Promise<string> {
  const target = path.resolve(destination);
  await dialectOf(db).backup(db, target);
  return target;
}

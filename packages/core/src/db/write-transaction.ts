import type { Knex } from 'knex';
import { dialectOf, type Database } from './connect.js';
import { isRetryable } from './database-errors.js';

const ATTEMPTS = 3;

/**
 * A short write transaction shared by several gateways, at the dialect's write isolation (MySQL/MariaDB:
 * READ COMMITTED, so searches take no gap locks; PostgreSQL runs it already), every statement inside locking
 * rows by primary key in ascending order. A transaction lost to another one (a deadlock victim) is run again.
 */
export async function writeTransaction<T>(db: Database, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const isolationLevel = dialectOf(db).writeIsolation;
  const config = isolationLevel ? { isolationLevel } : undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work, config);
    } catch (err) {
      if (attempt >= ATTEMPTS || !isRetryable(err)) throw err;
    }
  }
}

/**
 * Locks one user's row for the rest of the transaction, so that the logins and clears of one user run
 * one after another on every instance (the dialect's lockRow). Resolves to whether the user exists.
 */
export async function lockUser(trx: Knex.Transaction, userId: number): Promise<boolean> {
  return (await dialectOf(trx).lockRow(trx, 'users', { id: userId })) !== undefined;
}

/**
 * Locks one row for the rest of the transaction and reads it as it is now (after any write that held it
 * committed): SELECT … FOR UPDATE, or SQLite's write lock (db/dialects/). Undefined when there is no such row.
 */
export function lockRow(
  trx: Knex.Transaction,
  table: string,
  key: Record<string, string | number>,
  columns: readonly string[],
): Promise<Record<string, unknown> | undefined> {
  return dialectOf(trx).lockRow(trx, table, key, columns);
}

import type { Knex } from 'knex';
import { dialectOf, isMysql, type Database } from './connect.js';
import { isRetryable } from './database-errors.js';

const ATTEMPTS = 3;

/**
 * A short write transaction shared by several gateways. On MySQL/MariaDB it runs READ COMMITTED, so
 * searches take no gap locks (the usual source of deadlocks between concurrent inserts and deletes), and
 * a deadlock victim is run again; every statement inside locks rows by primary key in ascending order.
 * PostgreSQL runs READ COMMITTED already (each statement sees what committed before it began, after the
 * row locks it waited for), and its deadlock victims are run again likewise.
 */
export async function writeTransaction<T>(db: Database, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const config = isMysql(db) ? { isolationLevel: 'read committed' as const } : undefined;
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
 * one after another on every instance. MySQL/MariaDB and PostgreSQL: SELECT … FOR UPDATE. SQLite: a no-op UPDATE as the
 * first statement, which takes the database's write lock at once, as BEGIN IMMEDIATE would (knex always
 * says BEGIN; SQLite waits out its busy timeout for a lock taken before any read, without a stale snapshot).
 * Resolves to whether the user exists.
 */
export async function lockUser(trx: Knex.Transaction, userId: number): Promise<boolean> {
  if (dialectOf(trx) !== 'sqlite') return (await trx('users').where({ id: userId }).forUpdate().first('id')) !== undefined;
  return (
    (await trx('users')
      .where({ id: userId })
      .update({ id: trx.ref('id') })) > 0
  );
}

/**
 * Locks one row for the rest of the transaction and reads it as it is now (after any write that held it committed):
 * MySQL/MariaDB and PostgreSQL: SELECT … FOR UPDATE; SQLite: a no-op UPDATE first, which takes the database's write
 * lock (as lockUser). Undefined when there is no such row.
 */
export async function lockRow(
  trx: Knex.Transaction,
  table: string,
  key: Record<string, string | number>,
  columns: readonly string[],
): Promise<Record<string, unknown> | undefined> {
  if (dialectOf(trx) !== 'sqlite') return (await trx(table).where(key).forUpdate().first(columns)) as Record<string, unknown> | undefined;
  const [column] = Object.keys(key);
  if (
    (await trx(table)
      .where(key)
      .update({ [column!]: trx.ref(column!) })) === 0
  )
    return undefined;
  return (await trx(table).where(key).first(columns)) as Record<string, unknown> | undefined;
}

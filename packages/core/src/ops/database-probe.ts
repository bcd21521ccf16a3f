import type { Database } from '../db/connect.js';
import type { Logger } from '../log.js';

const DATABASE_DEADLINE_MS = 1_000;
export const OK = 'ok';

/** Thrown when the read answered but the write did not: the check says so. */
class WriteRefused extends Error {}

/**
 * /readyz's database check: `select 1`, then a write of one row of `tkgate_readiness` (migration 003),
 * committed, both within a second. A database that answers reads but refuses writes (a full disk, a
 * read-only server, rights withdrawn) is not ready: every login and logout would fail. Probes arriving
 * while one runs share it, so a hanging database never piles up queries; the detailed cause goes to the
 * log (once per change), the answer names the check's outcome only: `ok`, `no answer within 1s`,
 * `unreachable` or `refuses writes`.
 */
/** The committed write of the readiness row; throws WriteRefused with the database's reason. */
async function writeReadinessRow(db: Database): Promise<void> {
  try {
    await db('tkgate_readiness').insert({ id: 1, checked_at: Date.now() }).onConflict('id').merge();
  } catch (err) {
    throw new WriteRefused(`write refused: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * At start, once: a database that answers reads but refuses writes would let the gateway start and log
 * "listening", then fail every login. Logged as an error with the database's reason (and, for a read-only
 * SQLite file, what usually causes it); the start goes on, and /readyz answers 503 `refuses writes`.
 */
export async function reportRefusedWrites(db: Database, log: Logger, fields: { database: string; sqliteFile?: string }): Promise<void> {
  try {
    await writeReadinessRow(db);
  } catch (err) {
    if (!(err instanceof WriteRefused)) throw err;
    const reason = ((err.cause as Error | undefined)?.message ?? err.message).split('\n')[0];
    const readOnlyFile = fields.sqliteFile !== undefined && /readonly|read-only|permission/i.test(reason ?? '');
    log.error('the database refuses writes', {
      database: fields.database,
      reason,
      ...(readOnlyFile && {
        hint: `${fields.sqliteFile} (or its directory, or its -wal/-shm files) cannot be written by this process's user (uid ${process.getuid?.()}): files created by another user, such as a command run as root, must be given back to it (chown)`,
      }),
    });
  }
}

export function databaseCheck(db: Database, log: Logger): () => Promise<string> {
  let running: Promise<string> | undefined;
  let lastCause = '';
  const probe = async (): Promise<void> => {
    await db.raw('select 1');
    await writeReadinessRow(db);
  };
  const run = async (): Promise<string> => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${DATABASE_DEADLINE_MS} ms`)), DATABASE_DEADLINE_MS);
    });
    try {
      await Promise.race([probe(), deadline]);
      if (lastCause) log.info('readiness: database answers again');
      lastCause = '';
      return OK;
    } catch (err) {
      const cause = (err as Error).message;
      if (cause !== lastCause) log.warn('readiness: database check failed', { reason: cause });
      lastCause = cause;
      if (err instanceof WriteRefused) return 'refuses writes';
      return cause.startsWith('no answer') ? `no answer within ${DATABASE_DEADLINE_MS / 1000}s` : 'unreachable';
    } finally {
      clearTimeout(timer);
    }
  };
  return () => (running ??= run().finally(() => (running = undefined)));
}

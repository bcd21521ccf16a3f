import type { Database } from '../db/connect.js';

const DELETE_CHUNK = 500;
/** A purge is due at most this often, whatever the retention. */
const MAX_INTERVAL_MS = 60 * 60_000;

/** How often the purge runs for a retention: a tenth of it, at most hourly. */
export const purgeIntervalMs = (retentionMs: number): number => Math.min(MAX_INTERVAL_MS, Math.max(1_000, Math.floor(retentionMs / 10)));

/**
 * Claims the next purge for this instance: the one UPDATE that moves `next_at` of the purge table (one row:
 * `tkgate_audit_purge`, `tkgate_runs_purge`) past now while it was due. Of instances asking at once, exactly one sees
 * its row changed; the others purge nothing until the next is due, so one instance purges at a time (docs/audit.md,
 * "Retention").
 */
export async function claimPurge(db: Database, table: string, now: number, intervalMs: number): Promise<boolean> {
  // A read first: most ticks find the purge not due, and a read takes no write lock (SQLite's is the whole file).
  const due = await db(table).where('id', 1).first('next_at');
  if (!due || Number(due.next_at) > now) return false;
  const changed = await db(table)
    .where('id', 1)
    .andWhere('next_at', '<=', now)
    .update({ next_at: now + intervalMs });
  return Number(changed) === 1;
}

/**
 * Deletes the events older than `retentionMs` when this instance claims the due purge; resolves to how many
 * it deleted, or undefined when the purge was not due here. In chunks by id, so no statement holds the table long.
 */
export async function purgeAuditEvents(db: Database, retentionMs: number, now = Date.now()): Promise<number | undefined> {
  if (!(await claimPurge(db, 'tkgate_audit_purge', now, purgeIntervalMs(retentionMs)))) return undefined;
  const before = now - retentionMs;
  let purged = 0;
  for (;;) {
    const ids = ((await db('audit_events').where('at', '<', before).orderBy('id').limit(DELETE_CHUNK).pluck('id')) as Array<number | string>).map(Number);
    if (ids.length === 0) return purged;
    purged += await db('audit_events').whereIn('id', ids).delete();
    if (ids.length < DELETE_CHUNK) return purged;
  }
}

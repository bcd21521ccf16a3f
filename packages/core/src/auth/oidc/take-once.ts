import type { Database } from '../../db/connect.js';

/**
 * Reads a single-use row by its key and deletes it: the row is returned only to the caller whose delete removed
 * it (of two concurrent takers, one wins) and only while `expires_at` is in the future.
 */
export async function takeOnce(db: Database, table: string, key: Record<string, string>, now: number): Promise<Record<string, unknown> | undefined> {
  const row = await db(table).where(key).first();
  if (!row) return undefined;
  const deleted = await db(table).where(key).delete();
  return deleted === 1 && Number(row.expires_at) > now ? row : undefined;
}

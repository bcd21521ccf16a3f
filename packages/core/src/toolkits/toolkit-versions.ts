import { hostname } from 'node:os';
import type { Database } from '../db/connect.js';

/** A good version of a toolkit file as recorded in `toolkit_versions`. */
export interface StoredVersion {
  name: string;
  hash: string;
  content: string;
  recordedAt: number;
}

/** Versions kept per toolkit name: the last good one, and a few before it (another instance may serve an older file). */
const KEPT_PER_NAME = 3;
/** A larger file is not recorded (MySQL's MEDIUMTEXT holds 16 MiB); its toolkit has no last good version. */
export const MAX_RECORDED_BYTES = 8 * 1024 * 1024;

/**
 * The toolkits' good versions in the database (docs/toolkits.md, "Last good version"): every instance records what it serves, so any
 * instance that finds a file refused at start can serve that toolkit's last good version. One row per name and
 * content hash (an upsert), older ones pruned past a handful per name.
 */
export class ToolkitVersions {
  /** The hash this process knows to be the newest recorded for each name: an unchanged toolkit is not written again. */
  private readonly newest = new Map<string, string>();
  readonly instance = `${hostname()}:${process.pid}`;

  constructor(private readonly db: Database) {}

  /** Reads which version of each toolkit is the newest recorded (no content). */
  async learn(): Promise<void> {
    const rows = (await this.db('toolkit_versions').select('name', 'content_hash', 'recorded_at').orderBy('recorded_at', 'asc')) as Array<{
      name: string;
      content_hash: string;
    }>;
    for (const row of rows) this.newest.set(row.name, row.content_hash);
  }

  /** The newest recorded version of each of these names that has one. */
  async lastGood(names: readonly string[]): Promise<Map<string, StoredVersion>> {
    const found = new Map<string, StoredVersion>();
    if (names.length === 0) return found;
    const rows = (await this.db('toolkit_versions')
      .whereIn('name', [...new Set(names)])
      .select('name', 'content_hash', 'content', 'recorded_at')
      .orderBy('recorded_at', 'asc')) as Array<{ name: string; content_hash: string; content: string; recorded_at: number | string }>;
    for (const row of rows) found.set(row.name, { name: row.name, hash: row.content_hash, content: row.content, recordedAt: Number(row.recorded_at) });
    return found;
  }

  /** Whether this version is already the newest recorded for its name. */
  isNewest(name: string, hash: string): boolean {
    return this.newest.get(name) === hash;
  }

  /**
   * Records versions as served now (insert, or a new time for a known one) and prunes each name's oldest
   * versions: in batches of at most RECORD_BATCH rows and RECORD_BATCH_BYTES of content, three statements a
   * batch, with a turn of the event loop before each. A reload of 3,000 files recorded one by one was 9,000
   * statements, and on SQLite (synchronous, so every promise of the chain resolved at once) one piece of
   * seconds that held every request; figures: docs/performance.md, "3,000 files at once".
   * Rejects with the first failing batch (the versions recorded before it stay recorded).
   */
  async record(versions: ReadonlyArray<{ name: string; hash: string; content: string }>): Promise<void> {
    for (const batch of batches(versions)) {
      await new Promise((resolve) => setImmediate(resolve));
      const recordedAt = Date.now();
      const rows = batch.map(({ name, hash, content }) => ({ name, content_hash: hash, content, recorded_at: recordedAt, instance: this.instance }));
      await this.db('toolkit_versions').insert(rows).onConflict(['name', 'content_hash']).merge(['recorded_at', 'instance']);
      for (const { name, hash } of batch) this.newest.set(name, hash);
      const names = batch.map(({ name }) => name);
      const kept = (await this.db('toolkit_versions')
        .whereIn('name', names)
        .orderBy([
          { column: 'name', order: 'asc' },
          { column: 'recorded_at', order: 'desc' },
        ])
        .select('name', 'content_hash')) as Array<{ name: string; content_hash: string }>;
      const seen = new Map<string, number>();
      const old = kept.filter((row) => {
        const count = (seen.get(row.name) ?? 0) + 1;
        seen.set(row.name, count);
        return count > KEPT_PER_NAME;
      });
      if (old.length === 0) continue;
      await this.db('toolkit_versions')
        .where((query) => {
          for (const row of old) void query.orWhere({ name: row.name, content_hash: row.content_hash });
        })
        .delete();
    }
  }
}

/** Rows recorded in one statement, and the content they may carry together (a larger file goes alone). */
const RECORD_BATCH = 100;
const RECORD_BATCH_BYTES = 1024 * 1024;

/** The versions in order, cut into batches of at most RECORD_BATCH rows and RECORD_BATCH_BYTES of content (at least one row each). */
function batches<T extends { content: string }>(versions: readonly T[]): T[][] {
  const cut: T[][] = [];
  let batch: T[] = [];
  let bytes = 0;
  for (const version of versions) {
    const size = Buffer.byteLength(version.content);
    if (batch.length > 0 && (batch.length >= RECORD_BATCH || bytes + size > RECORD_BATCH_BYTES)) {
      cut.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(version);
    bytes += size;
  }
  if (batch.length > 0) cut.push(batch);
  return cut;
}

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
 * The toolkits' good versions in the database (SPEC section 5): every instance records what it serves, so any
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

  /** Records a version as served now (insert, or a new time for a known one) and prunes that name's oldest versions. */
  async record(name: string, hash: string, content: string): Promise<void> {
    const row = { name, content_hash: hash, content, recorded_at: Date.now(), instance: this.instance };
    await this.db('toolkit_versions').insert(row).onConflict(['name', 'content_hash']).merge(['recorded_at', 'instance']);
    this.newest.set(name, hash);
    const hashes = (await this.db('toolkit_versions').where({ name }).orderBy('recorded_at', 'desc').select('content_hash')) as Array<{ content_hash: string }>;
    const old = hashes.slice(KEPT_PER_NAME).map((entry) => entry.content_hash);
    if (old.length > 0) await this.db('toolkit_versions').where({ name }).whereIn('content_hash', old).delete();
  }
}

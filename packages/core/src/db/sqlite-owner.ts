import { chownSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { dialectOf, type DatabaseSettings } from './connect.js';

/** The files SQLite may create beside the database (WAL mode's, and the rollback journal). */
const COMPANIONS = ['', '-wal', '-shm', '-journal'];

/**
 * A command run as root on a SQLite database that belongs to another user (the .deb's `tkgate`, owner of
 * /var/lib/tkgate) would leave root-owned files behind (the database itself on a first run, a directory,
 * a -wal or -shm), which that user, the service, then cannot write: it starts and refuses every write.
 * Returns what restores the owner once the command is done: the files and directories the command created
 * (or found root-owned) are given to the owner of the database file, else of its nearest existing directory.
 * Nothing to do unless the process runs as root and that owner is another user.
 */
export function keepSqliteOwner(db: DatabaseSettings): () => void {
  const databaseFile = dialectOf(db).databaseFile(db);
  if (databaseFile === undefined || process.getuid?.() !== 0) return () => undefined;
  const file = path.resolve(databaseFile);
  const missingDirs: string[] = [];
  let existing = file;
  if (!existsSync(file)) {
    existing = path.dirname(file);
    while (!existsSync(existing) && path.dirname(existing) !== existing) {
      missingDirs.push(existing);
      existing = path.dirname(existing);
    }
  }
  const { uid, gid } = statSync(existing);
  if (uid === 0) return () => undefined;
  return () => {
    for (const candidate of [...missingDirs, ...COMPANIONS.map((suffix) => file + suffix)]) {
      try {
        if (statSync(candidate).uid !== uid) chownSync(candidate, uid, gid);
      } catch {
        // Gone already (SQLite removes -wal and -shm when the last connection closes): nothing to give back.
      }
    }
  };
}

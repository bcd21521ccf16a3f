import mysql from 'mysql2/promise';
import type { Testbed } from './fixtures.js';

/**
 * A database that refuses to delete sessions, for one gateway, until allowed again.
 * MariaDB: that gateway connects as a user without the DELETE right on `sessions` (a table grant, which
 * running connections see at their next statement). SQLite (one file, no users; root ignores file modes):
 * a trigger that aborts every delete, as a full or failing disk would.
 */
export interface RefusedDeletes {
  /** The `db` section for the gateway that is refused. */
  dbConfig: Record<string, unknown>;
  allow(): Promise<void>;
  drop(): Promise<void>;
}

export async function refuseSessionDeletes(bed: Testbed): Promise<RefusedDeletes> {
  if (bed.dbConfig.client === 'sqlite') {
    await bed.db.raw("CREATE TRIGGER refuse_session_delete BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    const allow = () => bed.db.raw('DROP TRIGGER IF EXISTS refuse_session_delete').then(() => undefined);
    return { dbConfig: bed.dbConfig, allow, drop: allow };
  }
  const url = new URL(String(bed.dbConfig.url));
  const database = url.pathname.slice(1);
  const user = `nodel_${database}`.slice(0, 80);
  const admin = await mysql.createConnection({ host: url.hostname, port: Number(url.port || 3306), user: url.username || 'root', password: '' });
  await admin.query('CREATE USER ?@? IDENTIFIED BY ?', [user, '%', 'nodel-pw']);
  await admin.query(`GRANT SELECT, INSERT, UPDATE ON \`${database}\`.* TO ?@?`, [user, '%']);
  await admin.query(`GRANT DELETE ON \`${database}\`.login_failures TO ?@?`, [user, '%']);
  const restricted = new URL(url);
  restricted.username = user;
  restricted.password = 'nodel-pw';
  return {
    dbConfig: { client: 'mysql', url: restricted.toString() },
    allow: async () => {
      await admin.query(`GRANT DELETE ON \`${database}\`.sessions TO ?@?`, [user, '%']);
    },
    drop: async () => {
      await admin.query('DROP USER IF EXISTS ?@?', [user, '%']);
      await admin.end();
    },
  };
}

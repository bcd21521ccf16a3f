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
  const { admin, database, user, dbConfig, drop } = await restrictedUser(bed, 'nodel');
  await admin.query(`GRANT SELECT, INSERT, UPDATE ON \`${database}\`.* TO ?@?`, [user, '%']);
  await admin.query(`GRANT DELETE ON \`${database}\`.login_failures TO ?@?`, [user, '%']);
  return {
    dbConfig,
    allow: async () => {
      await admin.query(`GRANT DELETE ON \`${database}\`.sessions TO ?@?`, [user, '%']);
    },
    drop,
  };
}

/** A MariaDB user of the suite's database with no rights yet, for the grants a test gives and takes back. */
async function restrictedUser(bed: Testbed, prefix: string) {
  const url = new URL(String(bed.dbConfig.url));
  const database = url.pathname.slice(1);
  const user = `${prefix}_${database}`.slice(0, 80);
  const password = `${prefix}-pw`;
  const admin = await mysql.createConnection({ host: url.hostname, port: Number(url.port || 3306), user: url.username || 'root', password: '' });
  await admin.query('CREATE USER ?@? IDENTIFIED BY ?', [user, '%', password]);
  const restricted = new URL(url);
  restricted.username = user;
  restricted.password = password;
  const drop = async () => {
    await admin.query('DROP USER IF EXISTS ?@?', [user, '%']);
    await admin.end();
  };
  return { admin, database, user, dbConfig: { client: 'mysql', url: restricted.toString() }, drop };
}

/**
 * A database that answers reads but refuses the readiness probe's write (ops/database-probe.ts) when told,
 * as a full disk or a read-only server would. MariaDB: the gateway's user loses INSERT and UPDATE on
 * `tkgate_readiness` (a table grant, seen at its next statement); SQLite: triggers abort the write.
 */
export interface RefusedReadinessWrites {
  dbConfig: Record<string, unknown>;
  refuse(): Promise<void>;
  allow(): Promise<void>;
  drop(): Promise<void>;
}

export async function refuseReadinessWrites(bed: Testbed): Promise<RefusedReadinessWrites> {
  if (bed.dbConfig.client === 'sqlite') {
    const refuse = async () => {
      for (const event of ['INSERT', 'UPDATE'])
        await bed.db.raw(
          `CREATE TRIGGER refuse_readiness_${event} BEFORE ${event} ON tkgate_readiness BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
        );
    };
    const allow = async () => {
      for (const event of ['INSERT', 'UPDATE']) await bed.db.raw(`DROP TRIGGER IF EXISTS refuse_readiness_${event}`);
    };
    // The triggers go with the suite's database file.
    return { dbConfig: bed.dbConfig, refuse, allow, drop: async () => undefined };
  }
  const { admin, database, user, dbConfig, drop } = await restrictedUser(bed, 'ro');
  await admin.query(`GRANT SELECT ON \`${database}\`.* TO ?@?`, [user, '%']);
  const allow = async () => {
    await admin.query(`GRANT INSERT, UPDATE ON \`${database}\`.tkgate_readiness TO ?@?`, [user, '%']);
  };
  await allow();
  const refuse = async () => {
    await admin.query(`REVOKE INSERT, UPDATE ON \`${database}\`.tkgate_readiness FROM ?@?`, [user, '%']);
  };
  return { dbConfig, refuse, allow, drop };
}

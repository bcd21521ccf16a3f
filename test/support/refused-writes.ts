import mysql from 'mysql2/promise';
import pg from 'pg';
import { postgresAdmin } from './databases.js';
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
  if (bed.dbConfig.client === 'postgres') {
    const { admin, user, dbConfig, drop } = await restrictedPostgresUser(bed, 'nodel');
    await admin.query(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO "${user}"`);
    await admin.query(`GRANT DELETE ON login_failures TO "${user}"`);
    return { dbConfig, allow: async () => void (await admin.query(`GRANT DELETE ON sessions TO "${user}"`)), drop };
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
 * A PostgreSQL role (roles belong to the server) that may use the suite's database and its sequences, with
 * no table rights yet; `admin` is a connection to that database as its owner. Rights are checked at each
 * statement, so running connections see a grant or a revoke at once.
 */
async function restrictedPostgresUser(bed: Testbed, prefix: string) {
  const url = new URL(String(bed.dbConfig.url));
  const database = url.pathname.slice(1);
  const user = `${prefix}_${database}`.slice(0, 63);
  const admin = new pg.Client({ connectionString: url.toString() });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.query(`CREATE ROLE "${user}" LOGIN PASSWORD '${prefix}-pw'`);
  await admin.query(`GRANT CONNECT ON DATABASE "${database}" TO "${user}"`);
  await admin.query(`GRANT USAGE ON SCHEMA public TO "${user}"`);
  await admin.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO "${user}"`);
  const restricted = new URL(url);
  restricted.username = user;
  restricted.password = `${prefix}-pw`;
  const drop = async () => {
    // The role's grants live in the suite's database: dropped here, or with the database when that went first.
    await admin.query(`DROP OWNED BY "${user}"`).catch(() => undefined);
    await admin.end().catch(() => undefined);
    await postgresAdmin((server) => server.query(`DROP ROLE IF EXISTS "${user}"`));
  };
  return { admin, user, dbConfig: { client: 'postgres', url: restricted.toString() }, drop };
}

/**
 * A database that answers reads but refuses every write when told, as a full disk or a read-only server
 * would: every table there is then (the readiness probe's tkgate_readiness among them, where migrations
 * made it; older schemas without it are refused all the same). MariaDB: the gateway's user reads the
 * whole database and loses INSERT, UPDATE and DELETE on each table (table grants, which running
 * connections see at their next statement; a database grant only at their next USE); SQLite: triggers
 * abort every write.
 */
export interface RefusedWrites {
  dbConfig: Record<string, unknown>;
  refuse(): Promise<void>;
  allow(): Promise<void>;
  drop(): Promise<void>;
}

const WRITES = ['INSERT', 'UPDATE', 'DELETE'] as const;

export async function refuseWrites(bed: Testbed): Promise<RefusedWrites> {
  if (bed.dbConfig.client === 'sqlite') {
    const tables: string[] = (await bed.db.raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")).map(
      (row: { name: string }) => row.name,
    );
    const triggers = tables.flatMap((table) => WRITES.map((event) => ({ table, event, name: `refuse_${event}_${table}` })));
    const refuse = async () => {
      for (const { table, event, name } of triggers)
        await bed.db.raw(`CREATE TRIGGER "${name}" BEFORE ${event} ON "${table}" BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    };
    const allow = async () => {
      for (const { name } of triggers) await bed.db.raw(`DROP TRIGGER IF EXISTS "${name}"`);
    };
    // The triggers go with the suite's database file.
    return { dbConfig: bed.dbConfig, refuse, allow, drop: async () => undefined };
  }
  if (bed.dbConfig.client === 'postgres') {
    const { admin, user, dbConfig, drop } = await restrictedPostgresUser(bed, 'ro');
    await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO "${user}"`);
    const allow = async () => void (await admin.query(`GRANT ${WRITES.join(', ')} ON ALL TABLES IN SCHEMA public TO "${user}"`));
    await allow();
    const refuse = async () => void (await admin.query(`REVOKE ${WRITES.join(', ')} ON ALL TABLES IN SCHEMA public FROM "${user}"`));
    return { dbConfig, refuse, allow, drop };
  }
  const { admin, database, user, dbConfig, drop } = await restrictedUser(bed, 'ro');
  const [rows] = await admin.query('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?', [database]);
  const tables = (rows as Array<{ name: string }>).map((row) => row.name);
  await admin.query(`GRANT SELECT ON \`${database}\`.* TO ?@?`, [user, '%']);
  const onEach = async (statement: (table: string) => string) => {
    for (const table of tables) await admin.query(statement(`\`${database}\`.\`${table}\``), [user, '%']);
  };
  const allow = () => onEach((table) => `GRANT ${WRITES.join(', ')} ON ${table} TO ?@?`);
  await allow();
  const refuse = () => onEach((table) => `REVOKE ${WRITES.join(', ')} ON ${table} FROM ?@?`);
  return { dbConfig, refuse, allow, drop };
}

/**
 * A database on which one gateway cannot count rate-limit calls (`tkgate_rate_limits`), for good.
 * MariaDB: that gateway's user may read everything and write every other table (table grants), as after
 * an operator's mistake; SQLite: triggers abort every write of the table.
 */
export async function refuseRateLimitCounts(bed: Testbed): Promise<{ dbConfig: Record<string, unknown>; drop(): Promise<void> }> {
  if (bed.dbConfig.client === 'sqlite') {
    for (const event of ['INSERT', 'UPDATE'])
      await bed.db.raw(`CREATE TRIGGER refuse_rate_${event} BEFORE ${event} ON tkgate_rate_limits BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    return { dbConfig: bed.dbConfig, drop: async () => undefined };
  }
  if (bed.dbConfig.client === 'postgres') {
    const { admin, user, dbConfig, drop } = await restrictedPostgresUser(bed, 'norl');
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "${user}"`);
    await admin.query(`REVOKE INSERT, UPDATE, DELETE ON tkgate_rate_limits FROM "${user}"`);
    return { dbConfig, drop };
  }
  const { admin, database, user, dbConfig, drop } = await restrictedUser(bed, 'norl');
  await admin.query(`GRANT SELECT ON \`${database}\`.* TO ?@?`, [user, '%']);
  const [tables] = (await admin.query(`SHOW TABLES FROM \`${database}\``)) as unknown as [Array<Record<string, string>>];
  for (const row of tables) {
    const table = Object.values(row)[0]!;
    if (table !== 'tkgate_rate_limits') await admin.query(`GRANT INSERT, UPDATE, DELETE ON \`${database}\`.\`${table}\` TO ?@?`, [user, '%']);
  }
  return { dbConfig, drop };
}

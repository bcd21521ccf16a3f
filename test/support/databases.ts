import path from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { openDatabase, type Database } from '@tkgate/core';
import { tempDir } from './paths.js';

/**
 * Every DB-backed test runs once per dialect: a fresh SQLite file, a fresh database on the local MariaDB
 * and one on the local PostgreSQL. In CI a MariaDB or PostgreSQL that cannot be reached fails the run;
 * locally it does too, unless TKGATE_TEST_MYSQL=off or TKGATE_TEST_POSTGRES=off says to leave it out.
 */
export interface DialectTarget {
  name: 'sqlite' | 'mysql' | 'postgres';
  /** A new, empty database: its `db` config section, and a way to drop it. */
  create(): Promise<TestDatabase>;
}

export interface TestDatabase {
  dbConfig: Record<string, unknown>;
  /** A direct connection for assertions and fixtures. */
  open(): Database;
  drop(): Promise<void>;
}

const MYSQL = { host: process.env.TKGATE_TEST_MYSQL_HOST ?? '127.0.0.1', port: Number(process.env.TKGATE_TEST_MYSQL_PORT ?? 3306), user: 'root', password: '' };
const POSTGRES = {
  host: process.env.TKGATE_TEST_POSTGRES_HOST ?? '127.0.0.1',
  port: Number(process.env.TKGATE_TEST_POSTGRES_PORT ?? 5432),
  user: 'postgres',
  database: 'postgres',
};
let databaseCounter = 0;

/** One statement on the PostgreSQL server's maintenance database (CREATE/DROP DATABASE run outside transactions). */
export async function postgresAdmin<T>(work: (client: pg.Client) => Promise<T>, database = POSTGRES.database): Promise<T> {
  const client = new pg.Client({ ...POSTGRES, database, connectionTimeoutMillis: 3000 });
  // A connection ended by the server (a database dropped WITH (FORCE)) reports it as an event.
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const sqlite: DialectTarget = {
  name: 'sqlite',
  async create() {
    const filename = path.join(tempDir('tkgate-db-'), 'tkgate.sqlite');
    const dbConfig = { client: 'sqlite', filename };
    return {
      dbConfig,
      open: () => openDatabase({ client: 'sqlite', filename, url: '' }),
      drop: async () => undefined,
    };
  },
};

const mariadb: DialectTarget = {
  name: 'mysql',
  async create() {
    const name = `tkgate_t${process.pid}_${++databaseCounter}`;
    const admin = await mysql.createConnection(MYSQL);
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
    await admin.end();
    const url = `mysql://${MYSQL.user}@${MYSQL.host}:${MYSQL.port}/${name}`;
    return {
      dbConfig: { client: 'mysql', url },
      open: () => openDatabase({ client: 'mysql', filename: '', url }),
      drop: async () => {
        const conn = await mysql.createConnection(MYSQL);
        await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
        await conn.end();
      },
    };
  },
};

const postgres: DialectTarget = {
  name: 'postgres',
  async create() {
    const name = `tkgate_t${process.pid}_${++databaseCounter}`;
    // UTF8 whatever the server's default; the default collation compares exactly (and LIKE is case-sensitive).
    await postgresAdmin((admin) => admin.query(`CREATE DATABASE "${name}" ENCODING 'UTF8' TEMPLATE template0`));
    const url = `postgres://${POSTGRES.user}@${POSTGRES.host}:${POSTGRES.port}/${name}`;
    return {
      dbConfig: { client: 'postgres', url },
      open: () => openDatabase({ client: 'postgres', filename: '', url }),
      // WITH (FORCE) ends connections a test left open (a gateway killed on purpose, say).
      drop: () => postgresAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
    };
  },
};

/** The tables of a test database, as its server lists them. */
export async function tableNames(db: Database, dialect: DialectTarget['name']): Promise<string[]> {
  if (dialect === 'mysql') return ((await db.raw('SHOW TABLES')) as [Array<Record<string, string>>])[0].map((row) => Object.values(row)[0]!);
  if (dialect === 'postgres')
    return ((await db.raw('SELECT tablename FROM pg_tables WHERE schemaname = current_schema()')) as { rows: Array<{ tablename: string }> }).rows.map(
      (row) => row.tablename,
    );
  return ((await db.raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")) as Array<{ name: string }>).map((row) => row.name);
}

async function problemOf(connect: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await connect();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** A server the tests need: in CI always; locally unless its variable says off (then a loud line). */
async function serverDialect(target: DialectTarget, what: string, variable: string, start: string, connect: () => Promise<unknown>): Promise<DialectTarget[]> {
  const problem = await problemOf(connect);
  if (!problem) return [target];
  if (process.env.CI !== 'true' && process.env[variable] === 'off') {
    process.stderr.write(`\n  !! ${what} tests skipped (${variable}=off): ${problem}\n\n`);
    return [];
  }
  throw new Error(`${what} is required for the tests (${problem}). Start it (${start}), or outside CI set ${variable}=off to leave it out.`);
}

async function chooseDialects(): Promise<DialectTarget[]> {
  const mariadbTargets = await serverDialect(
    mariadb,
    `MariaDB at ${MYSQL.host}:${MYSQL.port}`,
    'TKGATE_TEST_MYSQL',
    'start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd',
    async () => (await mysql.createConnection({ ...MYSQL, connectTimeout: 3000 })).end(),
  );
  const postgresTargets = await serverDialect(
    postgres,
    `PostgreSQL at ${POSTGRES.host}:${POSTGRES.port}`,
    'TKGATE_TEST_POSTGRES',
    'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
    () => postgresAdmin((admin) => admin.query('SELECT 1')),
  );
  const chosen = [sqlite, ...mariadbTargets, ...postgresTargets];
  // TKGATE_TEST_DIALECTS=postgres (a comma-separated list) runs the suites on those alone, while working on one.
  const only = process.env.TKGATE_TEST_DIALECTS?.split(',').map((name) => name.trim());
  return only ? chosen.filter((target) => only.includes(target.name)) : chosen;
}

export const dialects: DialectTarget[] = await chooseDialects();

import path from 'node:path';
import mysql from 'mysql2/promise';
import { openDatabase, type Database } from '@tkgate/core';
import { tempDir } from './paths.js';

/**
 * Every DB-backed test runs once per dialect: a fresh SQLite file, and a fresh database on the local
 * MariaDB. In CI a MariaDB that cannot be reached fails the run; locally it does too, unless
 * TKGATE_TEST_MYSQL=off says to run on SQLite alone.
 */
export interface DialectTarget {
  name: 'sqlite' | 'mysql';
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
let databaseCounter = 0;

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

async function mariadbReachable(): Promise<string | undefined> {
  try {
    const conn = await mysql.createConnection({ ...MYSQL, connectTimeout: 3000 });
    await conn.end();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

async function chooseDialects(): Promise<DialectTarget[]> {
  const problem = await mariadbReachable();
  if (!problem) return [sqlite, mariadb];
  if (process.env.CI !== 'true' && process.env.TKGATE_TEST_MYSQL === 'off') {
    process.stderr.write(`\n  !! MariaDB tests skipped (TKGATE_TEST_MYSQL=off): ${problem}\n\n`);
    return [sqlite];
  }
  throw new Error(
    `MariaDB at ${MYSQL.host}:${MYSQL.port} is required for the tests (${problem}). ` +
      'Start it (start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd), ' +
      'or outside CI set TKGATE_TEST_MYSQL=off to run on SQLite only.',
  );
}

export const dialects: DialectTarget[] = await chooseDialects();

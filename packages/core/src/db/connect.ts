import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import type { ServerConfig } from '../config/server-config.js';

export type Database = Knex;

/** knex would print to the console; its errors reach our callers as rejections and are logged there. */
const quietKnexLog = { warn() {}, error() {}, deprecate() {}, debug() {} };

/**
 * Opens the configured database. SQLite: the file and its directory are created, WAL journal,
 * foreign keys on, and a busy timeout so a CLI write never fails a running gateway's write.
 * MySQL/MariaDB: epoch-millisecond BIGINTs come back as numbers (they fit in 2^53).
 */
export function openDatabase(db: ServerConfig['db']): Database {
  if (db.client === 'sqlite') {
    mkdirSync(path.dirname(db.filename), { recursive: true });
    return knex({
      client: 'better-sqlite3',
      connection: { filename: db.filename },
      useNullAsDefault: true,
      log: quietKnexLog,
      pool: {
        afterCreate(connection: { pragma(source: string): unknown }, done: (err: Error | null, connection: unknown) => void) {
          connection.pragma('journal_mode = WAL');
          connection.pragma('synchronous = NORMAL');
          connection.pragma('foreign_keys = ON');
          connection.pragma('busy_timeout = 5000');
          done(null, connection);
        },
      },
    });
  }
  return knex({ client: 'mysql2', connection: mysqlConnection(db.url), pool: { min: 0, max: 10 }, log: quietKnexLog });
}

function mysqlConnection(url: string): Knex.MySql2ConnectionConfig {
  const parsed = new URL(url);
  if (parsed.protocol !== 'mysql:' && parsed.protocol !== 'mariadb:') {
    throw new Error(`db.url: must start with mysql:// (got ${parsed.protocol}//)`);
  }
  return {
    host: parsed.hostname,
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')),
    charset: 'utf8mb4',
    supportBigNumbers: true,
    bigNumberStrings: false,
    connectTimeout: 10_000,
  };
}

export const isMysql = (db: Database): boolean => db.client.config.client === 'mysql2';

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { ServerConfig } from '../config/server-config.js';

export type Database = Knex;
/** A knex query builder of the gateway's database (what `db(table)` returns). */
export type QueryBuilder = Knex.QueryBuilder;

/** knex would print to the console; its errors reach our callers as rejections and are logged there. */
const quietKnexLog = { warn() {}, error() {}, deprecate() {}, debug() {} };

/** What opening a database needs: the server configuration's `db`, whose `timeout_ms` tools may leave out. */
export type DatabaseSettings = Pick<ServerConfig['db'], 'client' | 'filename' | 'url'> & { timeout_ms?: number };

/** SQLite's wait for a lock when no db.timeout is given (a tool's own connection). */
const DEFAULT_BUSY_MS = 5_000;

/**
 * Opens the configured database. SQLite: the file and its directory are created, WAL journal,
 * foreign keys on, and a busy timeout so a CLI write never fails a running gateway's write.
 * MySQL/MariaDB and PostgreSQL: epoch-millisecond BIGINTs come back as numbers (they fit in 2^53).
 *
 * `db.timeout` bounds every wait (docs/operating.md): SQLite's busy timeout (a lock held elsewhere);
 * on MySQL/MariaDB and PostgreSQL a connection from the pool, a new connection's handshake, and each
 * query, whose connection is dropped when it does not answer in time (a server that hangs, paused or
 * overloaded, would otherwise hold the request for ever).
 */
export function openDatabase(db: DatabaseSettings): Database {
  const timeout = db.timeout_ms;
  const bounds = timeout === undefined ? {} : { acquireConnectionTimeout: timeout };
  if (db.client === 'sqlite') {
    mkdirSync(path.dirname(db.filename), { recursive: true });
    return knex({
      client: 'better-sqlite3',
      connection: { filename: db.filename },
      useNullAsDefault: true,
      log: quietKnexLog,
      ...bounds,
      pool: {
        afterCreate(connection: { pragma(source: string): unknown }, done: (err: Error | null, connection: unknown) => void) {
          connection.pragma('journal_mode = WAL');
          connection.pragma('synchronous = NORMAL');
          connection.pragma('foreign_keys = ON');
          connection.pragma(`busy_timeout = ${sqliteBusyMs(db)}`);
          done(null, connection);
        },
      },
    });
  }
  if (db.client === 'postgres') {
    const pool = timeout === undefined ? {} : { afterCreate: dropTimedOutConnections, createTimeoutMillis: timeout };
    return knex({ client: 'pg', connection: postgresConnection(db.url, timeout), pool: { min: 0, max: 10, ...pool }, log: quietKnexLog, ...bounds });
  }
  const pool = timeout === undefined ? {} : { afterCreate: boundQueries(timeout), createTimeoutMillis: timeout };
  return knex({ client: 'mysql2', connection: mysqlConnection(db.url, timeout), pool: { min: 0, max: 10, ...pool }, log: quietKnexLog, ...bounds });
}

/** How long a SQLite connection waits for a lock another connection holds. */
export const sqliteBusyMs = (db: DatabaseSettings): number => db.timeout_ms ?? DEFAULT_BUSY_MS;

interface Mysql2Connection {
  query(options: { sql: string; timeout?: number }, ...rest: unknown[]): unknown;
  destroy(): void;
}

/**
 * Every query of a pooled MySQL connection gets mysql2's inactivity timeout; a query that ran out of it
 * leaves its connection waiting for the old answer, so the connection is destroyed (knex's pool then
 * drops it) and the caller gets the timeout error.
 */
function boundQueries(timeout: number) {
  return (connection: Mysql2Connection, done: (err: Error | null, connection: unknown) => void) => {
    const query = connection.query.bind(connection);
    connection.query = (options, ...rest) => {
      const callback = rest.at(-1);
      if (typeof options !== 'object' || typeof callback !== 'function') return query(options, ...rest);
      const onResult = (err: { code?: string } | null, ...results: unknown[]) => {
        if (err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') connection.destroy();
        return (callback as (...args: unknown[]) => unknown)(err, ...results);
      };
      return query({ timeout, ...options }, ...rest.slice(0, -1), onResult);
    };
    done(null, connection);
  };
}

function mysqlConnection(url: string, timeout: number | undefined): Knex.MySql2ConnectionConfig {
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
    connectTimeout: timeout ?? 10_000,
  };
}

/**
 * PostgreSQL answers BIGINT (and COUNT) as text; as on MySQL/MariaDB, a value that fits in 2^53 becomes a
 * number and a larger one stays exact as text. Every other type keeps node-postgres' own parser.
 */
const BIGINT_OID = 20;
const bigintAsNumber = (text: string): number | string => {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : text;
};
const postgresTypes: Knex.PgCustomTypesConfig = {
  getTypeParser: (oid: number, format?: string) =>
    oid === BIGINT_OID && format !== 'binary' ? bigintAsNumber : pg.types.getTypeParser(oid, format === 'binary' ? 'binary' : 'text'),
};

const CLIENT_MARGIN_MS = 500;

function postgresConnection(url: string, timeout: number | undefined): Knex.PgConnectionConfig {
  const parsed = new URL(url);
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new Error(`db.url: must start with postgres:// (got ${parsed.protocol}//)`);
  }
  // The server ends a statement past db.timeout itself (a lock wait, say: nothing runs later), and the
  // client gives up shortly after when the server does not even answer that (paused, or the network).
  const bounds = timeout === undefined ? {} : { statement_timeout: timeout, query_timeout: timeout + CLIENT_MARGIN_MS };
  return { connectionString: url, types: postgresTypes, connectionTimeoutMillis: timeout ?? 10_000, ...bounds };
}

interface PgConnection {
  query(config: unknown, callback?: unknown): unknown;
  __knex__disposed?: unknown;
}

/**
 * node-postgres' `query_timeout` answers the caller but leaves the connection waiting for the old answer:
 * marked disposed, knex's pool drops it instead of lending it again.
 */
function dropTimedOutConnections(connection: PgConnection, done: (err: Error | null, connection: unknown) => void) {
  const query = connection.query.bind(connection);
  connection.query = (config, callback) => {
    if (typeof callback !== 'function') return query(config, callback);
    return query(config, (err: Error | null, ...results: unknown[]) => {
      if (err?.message === PG_QUERY_TIMEOUT) connection.__knex__disposed = err;
      return (callback as (...args: unknown[]) => unknown)(err, ...results);
    });
  };
  done(null, connection);
}

/** node-postgres' message when a query did not answer within `query_timeout`. */
export const PG_QUERY_TIMEOUT = 'Query read timeout';

export type Dialect = 'sqlite' | 'mysql' | 'postgres';

const DIALECTS: Record<string, Dialect> = { 'better-sqlite3': 'sqlite', mysql2: 'mysql', pg: 'postgres' };

/** The database behind a knex instance (or transaction), for the few places SQL differs. */
export const dialectOf = (db: { client: Knex.Client }): Dialect => DIALECTS[db.client.config.client as string] ?? 'sqlite';
export const isMysql = (db: Knex): boolean => dialectOf(db) === 'mysql';
export const isPostgres = (db: Knex): boolean => dialectOf(db) === 'postgres';

/** The rows of a `db.raw` select: mysql2 answers [rows, fields], node-postgres a result with `rows`, SQLite the rows. */
export function rawRows<Row>(result: unknown): Row[] {
  if (Array.isArray(result)) return (Array.isArray(result[0]) ? result[0] : result) as Row[];
  return ((result as { rows?: Row[] }).rows ?? []) as Row[];
}

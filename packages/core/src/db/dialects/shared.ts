import knex, { type Knex } from 'knex';
import type { ClaimLocks, DatabaseSettings, SearchMode } from '../dialect.js';

/** What two of the dialects do alike (mostly the servers, MySQL/MariaDB and PostgreSQL, where SQLite differs). */

/** knex would print to the console; its errors reach our callers as rejections and are logged there. */
export const quietKnexLog = { warn() {}, error() {}, deprecate() {}, debug() {} };

type AfterCreate = (connection: never, done: (err: Error | null, connection: unknown) => void) => void;

/**
 * A server's pool: up to 10 connections, none kept idle; with db.timeout, acquiring one and opening one are
 * bounded by it, and `afterCreate(timeout)` bounds each query of a new connection (the driver's own way).
 */
export function openServerPool(
  settings: DatabaseSettings,
  client: 'mysql2' | 'pg',
  connection: Knex.StaticConnectionConfig,
  afterCreate: (timeout: number) => AfterCreate,
): Knex {
  const timeout = settings.timeout_ms;
  const bounds = timeout === undefined ? {} : { acquireConnectionTimeout: timeout };
  const pool = timeout === undefined ? {} : { afterCreate: afterCreate(timeout), createTimeoutMillis: timeout };
  return knex({ client, connection, pool: { min: 0, max: 10, ...pool }, log: quietKnexLog, ...bounds });
}

/** How long a new connection's handshake may take when no db.timeout is given (a tool's own connection). */
export const DEFAULT_CONNECT_MS = 10_000;

/** `db.url` parsed, refused unless it has one of the dialect's schemes. */
export function serverUrl(url: string, schemes: readonly string[]): URL {
  const parsed = new URL(url);
  if (!schemes.some((scheme) => parsed.protocol === `${scheme}:`)) {
    throw new Error(`db.url: must start with ${schemes[0]}:// (got ${parsed.protocol}//)`);
  }
  return parsed;
}

/** scheme://user@host:port/database, without the password. */
export function serverAddress(settings: DatabaseSettings, scheme: string, defaultPort: number): string {
  try {
    const url = new URL(settings.url);
    const user = url.username ? `${decodeURIComponent(url.username)}@` : '';
    return `${scheme}://${user}${url.hostname}:${url.port || defaultPort}${url.pathname}`;
  } catch {
    return `${settings.client} (db.url is not a valid URL)`;
  }
}

/** SELECT … FOR UPDATE: the row locked until the transaction ends, read as the last commit left it. */
export async function lockRowForUpdate(
  trx: Knex.Transaction,
  table: string,
  key: Record<string, string | number>,
  columns: readonly string[] | undefined,
): Promise<Record<string, unknown> | undefined> {
  return (await trx(table)
    .where(key)
    .forUpdate()
    .first(columns ?? Object.keys(key))) as Record<string, unknown> | undefined;
}

/** LIKE's wildcards and the escape character `!` in the text escaped with `!`. */
const likeText = (text: string) => text.replace(/[!%_]/g, '!$&');

export const likePattern = (mode: SearchMode, text: string): string => (mode === 'prefix' ? `${likeText(text)}%` : `%${likeText(text)}%`);

/** The id the driver reports for an inserted row (MySQL/MariaDB's insert id, SQLite's rowid; 0 when the table generates none). */
export async function insertedIdOf(db: Knex | Knex.Transaction, table: string, row: Record<string, unknown>): Promise<unknown> {
  const [id] = (await db(table).insert(row)) as unknown[];
  return id;
}

/** A statement whose placeholders are `?`, in order (SQLite, MySQL/MariaDB). */
export function withOrderedBindings(sql: string, bound: (index: number, placeholder: string) => string): string {
  let next = 0;
  return sql.replace(/\?/g, (mark) => bound(next++, mark));
}

/** MariaDB's and PostgreSQL's claim locks: `FOR UPDATE SKIP LOCKED` (MariaDB 10.6 and later, PostgreSQL 9.5). */
export const SKIP_LOCKED: ClaimLocks = {
  begin: async () => undefined,
  skipLocked: (query) => query.forUpdate().skipLocked(),
};

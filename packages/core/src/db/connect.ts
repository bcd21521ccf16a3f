import type { Knex } from 'knex';
import type { DatabaseSettings, Dialect, DialectName } from './dialect.js';
import { MYSQL } from './dialects/mysql.js';
import { POSTGRES } from './dialects/postgres.js';
import { SQLITE } from './dialects/sqlite.js';

export type Database = Knex;
/** A knex query builder of the gateway's database (what `db(table)` returns). */
export type QueryBuilder = Knex.QueryBuilder;
export type { DatabaseSettings } from './dialect.js';

/** Every dialect tkgate speaks (db/dialect.ts says what differs between them). */
export const DIALECTS: readonly Dialect[] = [SQLITE, MYSQL, POSTGRES];

const BY_NAME = new Map<string, Dialect>(DIALECTS.map((dialect) => [dialect.name, dialect]));
const BY_DRIVER = new Map<string, Dialect>(DIALECTS.map((dialect) => [dialect.driver, dialect]));

/**
 * The one way to ask what differs: the dialect of a knex instance, transaction or builder (by its driver), or of
 * the `db` settings (by `db.client`) before a connection exists.
 */
export function dialectOf(source: { client: Knex.Client } | { client: DialectName }): Dialect {
  const { client } = source;
  if (typeof client === 'string') return BY_NAME.get(client) ?? SQLITE;
  return BY_DRIVER.get(client.config.client as string) ?? SQLITE;
}

/**
 * Opens the configured database (each dialect's `open`: SQLite's file, pragmas and busy timeout; the servers'
 * pools). `db.timeout` bounds every wait (docs/operating.md): SQLite's busy timeout (a lock held elsewhere); on
 * MySQL/MariaDB and PostgreSQL a connection from the pool, a new connection's handshake, and each query, whose
 * connection is dropped when it does not answer in time (a server that hangs, paused or overloaded, would
 * otherwise hold the request for ever).
 */
export const openDatabase = (settings: DatabaseSettings): Database => dialectOf(settings).open(settings);

import type { Knex } from 'knex';
import type { ColumnKind } from './column-types.js';

/**
 * What differs between the databases tkgate runs on, and nothing else: one object per database implements it
 * (db/dialects/sqlite.ts, mysql.ts, postgres.ts), and `dialectOf` (db/connect.ts) is the one way to ask for it,
 * from a knex instance, transaction or builder, or from the `db` settings before a connection exists. The rest
 * of tkgate writes portable knex and asks this object where SQL or a driver differs; test/unit/layers.test.ts
 * fails on a driver name or dialect SQL outside db/.
 *
 * A claim of the next due rows (db/claims.ts) asks `claimLocks`; PostgreSQL's LISTEN/NOTIFY is `openListener`, a
 * member only that dialect has (the others poll, or tell each other through Redis), as `openReadConnection` is
 * SQLite's alone.
 */
export interface Dialect {
  /** The `db.client` setting's value. */
  readonly name: DialectName;
  /** knex's client: the driver package. */
  readonly driver: 'better-sqlite3' | 'mysql2' | 'pg';
  /** `db.system.name` of the OpenTelemetry semantic conventions. */
  readonly system: string;

  // Connecting

  /** The schemes `db.url` may have, the first the one messages name; none for a database in a file. */
  readonly urlSchemes: readonly string[];
  /** A knex instance on the database, its waits bounded by `db.timeout` (docs/operating.md). */
  open(settings: DatabaseSettings): Knex;
  /** Where the database is, without its password, for log lines. */
  address(settings: DatabaseSettings): string;
  /** The file this process writes the database into, when it is one (for hints on refused writes and file owners). */
  databaseFile(settings: DatabaseSettings): string | undefined;
  /**
   * SQLite only: a connection beside knex's pool whose statements are prepared once and answer at once (the
   * database is in this process); the others read through the pool, where the round trip dominates.
   */
  openReadConnection?(settings: DatabaseSettings): ReadConnection;
  /** The LIMIT/OFFSET clause of a prepared read's page, both values bound (db/prepared-reads.ts). */
  readonly boundPage: string;

  // Transactions and row locks

  /** The isolation of a short write transaction shared by several gateways (db/write-transaction.ts). */
  readonly writeIsolation: Knex.IsolationLevels | undefined;
  /**
   * Locks one row for the rest of the transaction and reads `columns` of it as it is now (after any write that
   * held it committed); without `columns`, only whether it exists (an object of no particular columns). Undefined:
   * no such row.
   */
  lockRow(
    trx: Knex.Transaction,
    table: string,
    key: Record<string, string | number>,
    columns?: readonly string[],
  ): Promise<Record<string, unknown> | undefined>;

  /** How a claim (db/claims.ts) keeps instances apart: rows another transaction holds are skipped, not waited for. */
  readonly claimLocks: ClaimLocks;

  // Instances telling each other

  /**
   * PostgreSQL only: a connection of its own, beside the pool, that LISTENs on `channel` and NOTIFYs on it
   * (wakeups/: LISTEN/NOTIFY); it connects again after a drop, and says when it is up and down.
   */
  openListener?(settings: DatabaseSettings, channel: string, events: ListenerEvents): Listener;

  // Text compared, ordered and searched byte for byte (docs/toolkits.md: values compare exactly)

  /** Beside `builder.where(column, value)` on a text column, what makes that `=` byte-exact (nothing where it is). */
  exactEquals(builder: Knex.QueryBuilder, column: string, value: Knex.Value): void;
  /** `column <sqlOperator> value` on a text column, compared byte for byte. */
  compareText(builder: Knex.QueryBuilder, column: string, sqlOperator: string, value: Knex.Value): Knex.QueryBuilder;
  /** Beside `builder.whereIn(column, values)` on a text column, what makes it byte-exact. */
  exactIn(builder: Knex.QueryBuilder, column: string, values: readonly Knex.Value[]): void;
  /** ORDER BY with NULL as the smallest value, and text (`text`) byte for byte. */
  orderBy(builder: Knex.QueryBuilder, column: string, direction: 'asc' | 'desc', text: boolean): Knex.QueryBuilder;
  /** A case-sensitive prefix or substring search (db/text-search.ts). */
  readonly search: TextSearch;
  /** A new text column (in a migration) that compares byte for byte: MySQL/MariaDB's binary collation. */
  exactTextColumn(column: Knex.ColumnBuilder): Knex.ColumnBuilder;

  // Rows written

  /** Inserts one row and resolves to the id the database generated in `generated` (0 when none). */
  insertReturningId(db: Knex | Knex.Transaction, table: string, row: Record<string, unknown>, generated: string | undefined): Promise<unknown>;
  /**
   * One hit counted on a rate-limit budget (`tkgate_rate_limits`, migration 007) in one atomic upsert, bound
   * to (key_hash, window_end), and its answer read as the budget's count (rate-limits/database-counters.ts).
   */
  readonly budgetHit: { readonly upsert: string; count(answer: unknown, windowEnd: number): BudgetCount };

  // Schema and migrations

  /** Every column of the connection's own tables and views, with its kind (db/database-schema.ts). */
  readColumns(db: Knex): Promise<SchemaColumn[]>;
  /** Whether DDL is undone by a rollback (MySQL/MariaDB commit it at once): `migrate --dry-run` runs it then. */
  readonly transactionalDdl: boolean;
  /** A statement as the driver got it, each placeholder replaced by `bound(index, placeholder)`. */
  withBindings(sql: string, bound: (index: number, placeholder: string) => string): string;

  // Errors

  readonly errors: DialectErrors;

  // Backups

  /** `tkgate backup FILE` (`target` is absolute): SQLite's online copy; the others refuse, naming their own tool. */
  backup(db: Knex, target: string): Promise<void>;
}

export type DialectName = 'sqlite' | 'mysql' | 'postgres';

/** What opening a database needs: the server configuration's `db`, whose `timeout_ms` tools may leave out. */
export interface DatabaseSettings {
  client: DialectName;
  filename: string;
  url: string;
  timeout_ms?: number;
}

/** What a driver's error may carry (each of a cause chain is looked at). */
export interface DriverError {
  name?: unknown;
  code?: unknown;
  sqlState?: unknown;
  fatal?: unknown;
  message?: unknown;
}

/** Each driver's errors, by what they mean (db/database-errors.ts asks every dialect: an error does not say whose it is). */
export interface DialectErrors {
  /** A unique-key violation: someone else wrote that key first. */
  readonly uniqueViolation: ReadonlySet<string>;
  /** A transaction lost to another one (a deadlock victim, a serialization failure, still busy): safe to run again. */
  readonly retryable: ReadonlySet<string>;
  /** The server could not be reached at all (not there yet, shutting down): a wait at start may mend it. */
  readonly unreachable: ReadonlySet<string>;
  /** The database failing to serve now (no answer in time, a lost connection, no lock, space, rights or connections). */
  failedToServe(error: DriverError): boolean;
}

/** A budget's count after one hit. */
export interface BudgetCount {
  hits: number;
  windowEnd: number;
}

export interface SchemaColumn {
  table: string;
  column: string;
  /** What the column's type is for comparing and storing request values (db/column-types.ts). */
  kind: ColumnKind;
  /** A serial or identity column (PostgreSQL reports them; see insertReturningId). */
  generated: boolean;
}

/** A claim's locks (Dialect.claimLocks). */
export interface ClaimLocks {
  /**
   * Before a claim's first read: SQLite takes the database's write lock (one writer at a time, so nothing is
   * skipped and nothing is waited for inside); MariaDB and PostgreSQL nothing (their rows are locked as read).
   */
  begin(trx: Knex.Transaction, table: string): Promise<void>;
  /** The rows `query` selects, locked for the rest of the transaction; rows another transaction holds are skipped. */
  skipLocked(query: Knex.QueryBuilder): Knex.QueryBuilder;
}

/** What a listener (Dialect.openListener) tells. */
export interface ListenerEvents {
  /** A notification's payload, one from this connection included. */
  message(payload: string): void;
  /** Listening (again): notifications sent while it was down are lost. */
  up(): void;
  /** The connection dropped (or could not be made); it is tried again. */
  down(error: Error): void;
}

export interface Listener {
  /** Sends a notification on the channel (dropped while the connection is down: the listeners poll then). */
  notify(payload: string): void;
  close(): Promise<void>;
}

/** SQLite's connection of the prepared reads (Dialect.openReadConnection). */
export interface ReadConnection {
  /** A select prepared once, with the driver's own placeholders; its rows for the bound values. */
  prepare(sql: string): (values: readonly unknown[]) => Array<Record<string, unknown>>;
  /** A write prepared once, run for a list of bound values in one transaction (one commit), each run's first row. */
  prepareWrite<Row>(sql: string): (runs: ReadonlyArray<readonly unknown[]>) => Array<Row | undefined>;
  /** A number that changes whenever another connection has committed (SQLite's data_version). */
  dataVersion(): number;
  close(): void;
}

/**
 * A case-sensitive prefix or substring search that reads alike on every database: the text is matched as it
 * is, its own wildcard characters included.
 */
export type SearchMode = 'prefix' | 'contains';

export interface TextSearch {
  /** The bound value for a search of `text`, in this database's pattern syntax. */
  pattern(mode: SearchMode, text: string): string;
  /** `column` matches `pattern` (a value from pattern(), or a prepared read's parameter stand-in). */
  where(builder: Knex.QueryBuilder, column: string, pattern: unknown): Knex.QueryBuilder;
}

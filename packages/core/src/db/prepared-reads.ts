import type { Knex } from 'knex';
import { dialectOf, type Database, type DatabaseSettings } from './connect.js';
import { rawRows } from './raw-rows.js';

/**
 * Reads on the request path, compiled once. knex writes the SQL (identifiers quoted for the dialect,
 * values as placeholders); at request time only the bound values change.
 * SQLite: a statement cache on a dedicated connection (WAL lets it read beside the writer; Dialect.openReadConnection):
 * knex re-preparing and re-compiling every query was most of a status call's CPU (docs/performance.md,
 * "Reads on the request path").
 * MySQL/MariaDB and PostgreSQL: the same SQL through the knex pool, where the network round trip dominates.
 */
export interface PreparedRead {
  all(params?: readonly unknown[]): Promise<Array<Record<string, unknown>>>;
  /**
   * A cached read's rows for these values when the cache holds them and may be trusted, at once (no
   * promise); undefined means ask `all`. Uncached reads always answer undefined.
   */
  cachedRows(params?: readonly unknown[]): ReadonlyArray<Record<string, unknown>> | undefined;
}

export interface PrepareOptions {
  /**
   * Keep results until the database changes (SQLite only: exact, not a TTL: any commit by anyone empties
   * it). Rows come back frozen, shared between callers. For small result sets read on every request.
   */
  cached?: boolean;
  /**
   * LIMIT and OFFSET bound per call: the indexes of the values given to `all` that hold them (non-negative
   * integers, checked by the caller). The built select must have no limit or offset of its own.
   */
  page?: { limit: number; offset: number };
}

export interface PreparedReads {
  /** `build` gets `param(i)`, a stand-in for the i-th value given to `all`; it returns a knex select. */
  prepare(build: (param: (index: number) => string) => Knex.QueryBuilder, options?: PrepareOptions): PreparedRead;
  /**
   * A number that changes whenever anyone (this gateway's writer, the CLI, another process) has committed
   * to the database since it was last read; undefined when the database cannot tell (MySQL).
   * SQLite's data_version costs a fraction of the caller lookup it lets us skip (docs/performance.md,
   * "Reads on the request path").
   */
  dataVersion(): number | undefined;
  /**
   * SQLite only (undefined elsewhere): a write statement on the reads' own connection, for rows no cached read
   * selects (rate-limit budgets), run for a list of bound values in one transaction (one commit for the list),
   * answering each run's first row. SQLite moves data_version for other connections' commits only, so these
   * writes leave every cache of this gateway standing; through a connection of their own, each one emptied the
   * session, group and select caches for the next turn (docs/performance.md, "Rate limits").
   */
  prepareUncachedWrite<Row>(sql: string): ((runs: ReadonlyArray<readonly unknown[]>) => Array<Row | undefined>) | undefined;
  close(): void;
}

// NUL bytes on purpose: a stand-in no bound value can collide with.
// eslint-disable-next-line no-control-regex
const PARAM = /^\u0000tkgate-param-(\d+)\u0000$/;
const param = (index: number) => `\u0000tkgate-param-${index}\u0000`;

type BindingPlan = Array<{ param: number } | { value: unknown }>;

/**
 * A bound LIMIT or OFFSET makes SQLite re-prepare the statement on every run (its planner reads the bound
 * value): measured, one re-prepare per request, most of an internal endpoint's SQLite time. Prepared reads
 * take their limits from configuration or code, never from a request, so they go into the SQL as literals.
 * knex keeps the current limit in `_single` (not public); `limit(n, { skipBinding: true })` is.
 */
function inlineLimits(builder: Knex.QueryBuilder): Knex.QueryBuilder {
  const single = (builder as unknown as { _single?: { limit?: unknown; offset?: unknown } })._single ?? {};
  if (Number.isSafeInteger(single.limit)) builder.limit(single.limit as number, { skipBinding: true });
  if (Number.isSafeInteger(single.offset)) builder.offset(single.offset as number, { skipBinding: true });
  return builder;
}

/** `native`: the driver's own placeholders (better-sqlite3); else knex's `?`, for db.raw. */
function compile(
  build: (param: (index: number) => string) => Knex.QueryBuilder,
  page: PrepareOptions['page'] | undefined,
  native: boolean,
): { sql: string; plan: BindingPlan } {
  const builder = inlineLimits(build(param));
  const compiled = builder.toSQL();
  const { sql, bindings } = native ? compiled.toNative() : compiled;
  const plan: BindingPlan = bindings.map((binding) => {
    const match = typeof binding === 'string' ? PARAM.exec(binding) : null;
    return match ? { param: Number(match[1]) } : { value: binding };
  });
  if (!page) return { sql, plan };
  plan.push({ param: page.limit }, { param: page.offset });
  return { sql: `${sql} ${dialectOf(builder).boundPage}`, plan };
}

const bind = (plan: BindingPlan, params: readonly unknown[]) => plan.map((entry) => ('param' in entry ? params[entry.param] : entry.value));

/** Bound values are scalars (and Buffers): a BigInt becomes an object no scalar serialises to. */
const tagBigInt = (_key: string, value: unknown) => (typeof value === 'bigint' ? { bigint: value.toString() } : value);

/**
 * Results by parameters, valid for one data version; bounded by results and by rows held (a result of
 * more rows than MAX_ROWS_PER_RESULT is never kept), emptied whole past either bound.
 */
const MAX_CACHED_RESULTS = 10_000;
const MAX_CACHED_ROWS = 50_000;
const MAX_ROWS_PER_RESULT = 1_000;
function cachedReader(read: PreparedRead['all'], version: () => number): PreparedRead {
  let results = new Map<string, Array<Record<string, unknown>>>();
  let resultsVersion = -1;
  let rowsHeld = 0;
  /** The cache for the current data version, emptied when the version moved or a bound is passed. */
  const current = () => {
    const now = version();
    if (now !== resultsVersion || results.size >= MAX_CACHED_RESULTS || rowsHeld >= MAX_CACHED_ROWS) {
      results = new Map();
      resultsVersion = now;
      rowsHeld = 0;
    }
    return results;
  };
  const cachedRows = (params: readonly unknown[] = []) => current().get(keyOf(params));
  return {
    cachedRows,
    all: async (params = []) => {
      const hit = cachedRows(params);
      if (hit) return hit;
      const rows = Object.freeze((await read(params)).map((row) => Object.freeze(row))) as Array<Record<string, unknown>>;
      if (rows.length <= MAX_ROWS_PER_RESULT) {
        current().set(keyOf(params), rows);
        rowsHeld += rows.length;
      }
      return rows;
    },
  };
}

/** The replacer only when a BigInt is there: a replacer function makes every JSON.stringify slower. */
const keyOf = (params: readonly unknown[]): string =>
  params.some((value) => typeof value === 'bigint') ? JSON.stringify(params, tagBigInt) : JSON.stringify(params);

const NOT_CACHED = () => undefined;

export function openPreparedReads(db: Database, settings: DatabaseSettings): PreparedReads {
  const connection = dialectOf(settings).openReadConnection?.(settings);
  if (connection) {
    // Sampled at most once per event-loop turn (another process's commit shows from the next turn), and
    // dropped as soon as this gateway writes through knex, so its own writes show at once.
    let sampled: number | undefined;
    const dataVersion = () => {
      if (sampled === undefined) {
        sampled = connection.dataVersion();
        setImmediate(() => (sampled = undefined));
      }
      return sampled;
    };
    const forgetOnWrite = (query: { method?: string }) => {
      if (query.method !== 'select' && query.method !== 'first' && query.method !== 'pluck') sampled = undefined;
    };
    db.on('query', forgetOnWrite).on('query-response', (_rows: unknown, query: { method?: string }) => forgetOnWrite(query));
    return {
      dataVersion,
      prepareUncachedWrite: <Row>(sql: string) => connection.prepareWrite<Row>(sql),
      prepare(build, options = {}) {
        const { sql, plan } = compile(build, options.page, true);
        const rows = connection.prepare(sql);
        const all = async (params: readonly unknown[] = []) => rows(bind(plan, params));
        return options.cached ? cachedReader(all, dataVersion) : { all, cachedRows: NOT_CACHED };
      },
      close: () => {
        db.off('query', forgetOnWrite);
        connection.close();
      },
    };
  }
  return {
    prepare(build, options = {}) {
      // knex's own placeholders: PostgreSQL's $1, $2... are numbered by db.raw.
      const { sql, plan } = compile(build, options.page, false);
      return {
        cachedRows: NOT_CACHED,
        all: async (params = []) => rawRows<Record<string, unknown>>(await db.raw(sql, bind(plan, params) as Knex.RawBinding[])),
      };
    },
    dataVersion: () => undefined,
    prepareUncachedWrite: () => undefined,
    close: () => undefined,
  };
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import { LoginLimiter } from './auth/login-limiter.js';
import { ConfigError, type ServerConfig } from './config/server-config.js';
import { openDatabase, type Database } from './db/connect.js';
import { migrateToLatest } from './db/migrate.js';
import { describeDatabaseError } from './db/database-errors.js';
import { openPreparedReads } from './db/prepared-reads.js';
import type { Logger } from './log.js';
import { importPlugins, registerPlugins } from './plugins/plugin-loader.js';
import { migratePlugins } from './plugins/plugin-migrations.js';
import { SessionCache, trustFor, trustUntilChanged } from './sessions/session-cache.js';
import { SessionStore } from './sessions/session-store.js';
import { SessionTable } from './sessions/session-table.js';
import { demoted } from './cluster/worker-log.js';
import { describeProblem } from './toolkits/config-issues.js';
import { ToolkitRegistry } from './toolkits/toolkit-registry.js';
import { ToolkitWatcher } from './toolkits/toolkit-watcher.js';
import { UserDirectory } from './users/user-directory.js';

export interface RunningGateway {
  readonly url: string;
  readonly port: number;
  readonly sessions: SessionStore;
  readonly toolkits: ToolkitRegistry;
  /** Stops accepting, lets in-flight requests finish, flushes session writes, closes the database. */
  stop(): Promise<void>;
}

/** How long a graceful stop waits for in-flight requests before cutting connections. */
const DRAIN_TIMEOUT_MS = 10_000;

/** Work to undo at stop, in reverse order of start. */
type Cleanup = () => Promise<void> | void;

/**
 * Boots everything in order: database and migrations, plugins, toolkits (a broken file refuses the
 * start), sessions, the app, then the listener.
 */
export interface GatewayOptions {
  /** Set in a cluster worker: the primary has migrated and announced; `first` is the worker that logs reloads. */
  worker?: { id: number; first: boolean };
}

export async function startGateway(config: ServerConfig, log: Logger, options: GatewayOptions = {}): Promise<RunningGateway> {
  const cleanups: Cleanup[] = [];
  const undo = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  const db = openDatabase(config.db);
  cleanups.push(() => db.destroy());
  try {
    const imported = await importPlugins(config.plugins);
    // A cluster's primary has migrated before forking; workers starting together must not race for the lock.
    if (!options.worker) {
      const applied = await migrateToLatest(db).catch((err: Error) => {
        throw new Error(`database ${describeDatabase(config.db)}: ${err.message}`, { cause: err });
      });
      applied.push(...(await migratePlugins(db, imported)));
      if (applied.length > 0) log.info('database migrated', { applied });
    }

    const reads = openPreparedReads(db, config.db);
    cleanups.push(() => reads.close());
    const plugins = await registerPlugins(imported, { db, reads, log, options: config.plugin_options });
    cleanups.push(() => plugins.close());
    const toolkitLog = options.worker && !options.worker.first ? demoted(log) : log;
    const toolkits = new ToolkitRegistry(config.toolkits.dir, db, plugins.types, toolkitLog, { maxFileBytes: config.toolkits.max_file_bytes });
    const { problems } = await toolkits.load();
    if (problems.length > 0) {
      throw new ConfigError(`${problems.length} problem(s) in toolkit files: ${problems.map(describeProblem).join('; ')}`);
    }
    if (config.toolkits.watch) {
      const watcher = new ToolkitWatcher(toolkits, { settleMs: config.toolkits.settle_ms, rescanIntervalMs: config.toolkits.rescan_interval_ms }, toolkitLog);
      cleanups.push(() => watcher.close());
      await watcher.start();
    }

    const policy = {
      idleTimeoutMs: config.sessions.idle_timeout_ms,
      absoluteLifetimeMs: config.sessions.absolute_lifetime_ms,
      maxPerUser: config.sessions.max_per_user,
      cacheTtlMs: config.sessions.cache_ttl_ms,
    };
    const table = new SessionTable(db, reads, policy);
    // SQLite tells exactly when anyone committed (data_version): reads are kept until then. MySQL cannot: cache_ttl.
    const version = reads.dataVersion();
    const freshness = version === undefined ? trustFor(policy.cacheTtlMs) : trustUntilChanged(() => reads.dataVersion()!);
    const sessions = new SessionStore(policy, table, new SessionCache(freshness), log);
    if (!options.worker) await announceSessions(db, config, log);
    cleanups.push(() => sessions.flush());

    const limiter = new LoginLimiter(db, config.auth.login_max_failures, config.auth.login_window_ms);
    const housekeeping = startHousekeeping(sessions, limiter, config, log);
    cleanups.push(() => clearInterval(housekeeping));

    const app = createApp({ config, db, reads, sessions, users: new UserDirectory(db, reads), limiter, registry: toolkits, log });
    const server = createServer(app.callback());
    await listen(server, config.server.host, config.server.port);
    cleanups.push(() => drain(server, log));

    const port = (server.address() as AddressInfo).port;
    const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
    const url = `http://${host}:${port}${config.server.base_url}`;
    log.info(options.worker ? 'worker listening' : 'listening', { host: config.server.host, port, url, toolkits: [...toolkits.snapshot.keys()] });
    return {
      url,
      port,
      sessions,
      toolkits,
      stop: async () => {
        await undo();
        log.info('stopped');
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}

/** Where the database is, without its password. */
function describeDatabase(db: ServerConfig['db']): string {
  if (db.client === 'sqlite') return db.filename;
  const url = new URL(db.url);
  return `${url.hostname}:${url.port || 3306}${url.pathname}`;
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * The sessions at start. The database holds them for every instance; with `sessions.persist: false` a
 * (single-instance) gateway starts with none. Run by the first process only, never by a replaced worker.
 */
export async function announceSessions(db: Database, config: ServerConfig, log: Logger): Promise<void> {
  if (!config.sessions.persist) {
    await db('sessions').delete();
    log.info('sessions cleared at start (sessions.persist is false)');
    return;
  }
  const row = await db('sessions').where('expires_at', '>', Date.now()).count({ n: '*' }).first();
  log.info('sessions stored', { count: Number(row?.n ?? 0) });
}

/**
 * Purges expired sessions and stale failed-login keys, as often as a tenth of the idle timeout (1 s to 1 min).
 * Every instance does; a run never overlaps the previous one here, and concurrent runs elsewhere delete
 * by primary key in one order, with the expiry checked again, so they cannot deadlock or delete a live session.
 */
function startHousekeeping(sessions: SessionStore, limiter: LoginLimiter, config: ServerConfig, log: Logger): NodeJS.Timeout {
  const everyMs = Math.min(60_000, Math.max(1_000, config.sessions.idle_timeout_ms / 10));
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    Promise.all([
      sessions.purgeExpired().then((purged) => purged > 0 && log.debug('expired sessions purged', { purged })),
      limiter.sweep(),
    ])
      .catch((err) => log.warn('housekeeping failed', describeDatabaseError(err)))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return timer;
}

/** Stops accepting; waits for in-flight requests (closing keep-alive connections as they go idle). */
async function drain(server: Server, log: Logger): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const idleCloser = setInterval(() => server.closeIdleConnections(), 50);
  server.closeIdleConnections();
  const forced = setTimeout(() => {
    log.warn('in-flight requests did not finish in time; closing connections');
    server.closeAllConnections();
  }, DRAIN_TIMEOUT_MS);
  await closed;
  clearInterval(idleCloser);
  clearTimeout(forced);
}

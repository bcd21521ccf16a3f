import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import { LoginLimiter } from './auth/login-limiter.js';
import { ConfigError, type ServerConfig } from './config/server-config.js';
import { openDatabase } from './db/connect.js';
import { migrateToLatest } from './db/migrate.js';
import { openPreparedReads } from './db/prepared-reads.js';
import type { Logger } from './log.js';
import { importPlugins, registerPlugins } from './plugins/plugin-loader.js';
import { migratePlugins } from './plugins/plugin-migrations.js';
import { SessionPersistence } from './sessions/session-persistence.js';
import { SessionStore } from './sessions/session-store.js';
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
export async function startGateway(config: ServerConfig, log: Logger): Promise<RunningGateway> {
  const cleanups: Cleanup[] = [];
  const undo = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  const db = openDatabase(config.db);
  cleanups.push(() => db.destroy());
  try {
    const applied = await migrateToLatest(db).catch((err: Error) => {
      throw new Error(`database ${describeDatabase(config.db)}: ${err.message}`, { cause: err });
    });
    const imported = await importPlugins(config.plugins);
    applied.push(...(await migratePlugins(db, imported)));
    if (applied.length > 0) log.info('database migrated', { applied });

    const reads = openPreparedReads(db, config.db);
    cleanups.push(() => reads.close());
    const plugins = await registerPlugins(imported, { db, reads, log, options: config.plugin_options });
    cleanups.push(() => plugins.close());
    const toolkits = new ToolkitRegistry(config.toolkits.dir, db, plugins.types, log, { maxFileBytes: config.toolkits.max_file_bytes });
    const { problems } = await toolkits.load();
    if (problems.length > 0) {
      throw new ConfigError(`${problems.length} problem(s) in toolkit files: ${problems.map(describeProblem).join('; ')}`);
    }
    if (config.toolkits.watch) {
      const watcher = new ToolkitWatcher(toolkits, { settleMs: config.toolkits.settle_ms, rescanIntervalMs: config.toolkits.rescan_interval_ms }, log);
      cleanups.push(() => watcher.close());
      await watcher.start();
    }

    const policy = {
      idleTimeoutMs: config.sessions.idle_timeout_ms,
      absoluteLifetimeMs: config.sessions.absolute_lifetime_ms,
      maxPerUser: config.sessions.max_per_user,
    };
    const sessions = new SessionStore(policy, config.sessions.persist ? new SessionPersistence(db, policy) : undefined, log);
    const loaded = await sessions.load();
    if (config.sessions.persist) log.info('sessions loaded', { count: loaded });
    cleanups.push(() => sessions.flush());

    const limiter = new LoginLimiter(config.auth.login_max_failures, config.auth.login_window_ms);
    const housekeeping = startHousekeeping(sessions, limiter, config, log);
    cleanups.push(() => clearInterval(housekeeping));

    const app = createApp({ config, db, reads, sessions, users: new UserDirectory(db, reads), limiter, registry: toolkits, log });
    const server = createServer(app.callback());
    await listen(server, config.server.host, config.server.port);
    cleanups.push(() => drain(server, log));

    const port = (server.address() as AddressInfo).port;
    const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
    const url = `http://${host}:${port}${config.server.base_url}`;
    log.info('listening', { host: config.server.host, port, url, toolkits: [...toolkits.snapshot.keys()] });
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

/** Purges expired sessions and stale login-limit keys, as often as a tenth of the idle timeout (1 s to 1 min). */
function startHousekeeping(sessions: SessionStore, limiter: LoginLimiter, config: ServerConfig, log: Logger): NodeJS.Timeout {
  const everyMs = Math.min(60_000, Math.max(1_000, config.sessions.idle_timeout_ms / 10));
  const timer = setInterval(() => {
    limiter.sweep();
    sessions
      .sweep()
      .then((purged) => purged > 0 && log.debug('expired sessions purged', { purged }))
      .catch((err) => log.error('session purge failed', { err }));
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

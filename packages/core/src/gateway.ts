import { fleetSettingsOf } from './config/fleet-settings.js';
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiKeyStore } from './api-keys/api-key-store.js';
import { ApiKeyTable } from './api-keys/api-key-table.js';
import { createApp } from './app.js';
import { purgeAuditEvents } from './audit/audit-retention.js';
import { AuditTrail } from './audit/audit-trail.js';
import { LoginLimiter } from './auth/login-limiter.js';
import { ConfigError, type ServerConfig } from './config/server-config.js';
import { dialectOf, openDatabase, type Database } from './db/connect.js';
import { describeDatabaseError } from './db/database-errors.js';
import { migrateToLatest } from './db/migrate.js';
import { openPreparedReads, type PreparedReads } from './db/prepared-reads.js';
import { createListener } from './http/listener.js';
import { serveUpgrades } from './upgrade/upgrade-connection.js';
import type { Logger } from './log.js';
import { answerPrimaryScrapes } from './ops/cluster-metrics.js';
import { reportRefusedWrites } from './ops/database-probe.js';
import { answerWhileWaitingForDatabase } from './ops/health.js';
import { waitForDatabase } from './db/wait-for-database.js';
import type { ReadinessState } from './ops/health.js';
import { createMetrics } from './ops/metrics.js';
import { registrySource, serveMetrics } from './ops/metrics-server.js';
import { importPlugins, registerPlugins } from './plugins/plugin-loader.js';
import { Secrets } from './secrets/secrets.js';
import { JwtIssuers } from './auth/jwt/jwt-issuers.js';
import { InternalCalls } from './auth/internal-calls.js';
import { FieldChoices } from './parameters/index.js';
import { pluginRoutes } from './pipeline/plugin-routes.js';
import { maskedLogger } from './secrets/masked-logger.js';
import { migratePlugins } from './plugins/plugin-migrations.js';
import { databaseCounters, sweepRateLimits } from './rate-limits/database-counters.js';
import type { RateLimitCounters } from './rate-limits/rate-limit-counters.js';
import { redisCounters } from './rate-limits/redis-counters.js';
import { SessionCache, trustFor, trustUntilChanged } from './sessions/session-cache.js';
import { SessionStore } from './sessions/session-store.js';
import { SessionTable } from './sessions/session-table.js';
import { demoted } from './cluster/worker-log.js';
import { requireToolkitDirectory, sinkNames } from './toolkits/check-directory.js';
import { describeProblem } from './toolkits/config-issues.js';
import { ToolkitRegistry, type ReloadOutcome } from './toolkits/toolkit-registry.js';
import { ToolkitWatcher } from './toolkits/toolkit-watcher.js';
import { ToolkitVersions } from './toolkits/toolkit-versions.js';
import { createTracing } from './tracing/tracing.js';
import { Runs } from './runs/runs.js';
import { Schedules } from './schedules/schedules.js';
import { openWakeups } from './wakeups/wakeups.js';
import { Notifications } from './notifications/notifications.js';
import { UserDirectory } from './users/user-directory.js';
import { Triggers } from './triggers/triggers.js';

export interface RunningGateway {
  readonly url: string;
  readonly port: number;
  readonly sessions: SessionStore;
  readonly toolkits: ToolkitRegistry;
  /** The runs domain and the users: what the CLI's `runs rerun` calls on an `offline` gateway. */
  readonly runs: Runs;
  readonly users: UserDirectory;
  /** SIGHUP: rescans the toolkit files as the watcher would and logs the result, and reloads the TLS certificate. */
  rescan(reason: string): Promise<ReloadOutcome>;
  /** /readyz turns 503, then (after server.shutdown_delay) stops accepting, lets in-flight requests finish, flushes session writes, closes the database. */
  stop(): Promise<void>;
}

export interface GatewayOptions {
  /** tkgate's version, for the start-up line. */
  version?: string;
  /** Aborted (SIGTERM or SIGINT during start-up): what was started is undone and the start rejects with StartCancelled. */
  signal?: AbortSignal;
  /**
   * Set in a node:cluster worker (server.workers > 1): the primary has migrated and announced the sessions,
   * serves the metrics listener and reads this worker's metrics through prom-client's AggregatorRegistry
   * (ops/cluster-metrics.ts); `first` is the worker that logs toolkit reloads at info. `databaseReady`
   * resolves once the primary has the database ready (reached, migrated); it calls `onAwaited` first when
   * the primary has to wait for it, and the worker then listens at once, answering /healthz meanwhile.
   */
  worker?: { id: number; first: boolean; databaseReady?: (onAwaited: () => Promise<void>) => Promise<void> };
  /** The web console's built files (docs/console.md); by default `dist/public` of `@tkgate/console`. */
  consoleDir?: string;
  /**
   * The CLI's gateway (`tkgate runs rerun`): the whole request path, for one internal call, but none of an
   * instance's own work: it claims no run (the gateway instances do, woken as usual), fires no schedule, delivers no
   * notification and leaves the sessions as they are.
   */
  offline?: boolean;
}

/** The start was cancelled by a signal before the gateway served. */
export class StartCancelled extends Error {
  override name = 'StartCancelled';
}

/** How long a graceful stop waits for in-flight requests before cutting connections. */
const DRAIN_TIMEOUT_MS = 10_000;

/** How long a stop waits for the database connections to close (a database that hangs must not hang the stop). */
const DATABASE_CLOSE_MS = 2_000;

/** Waits for `work`, at most `ms`; `late` is told when it gave up. */
async function settleWithin(work: Promise<unknown>, ms: number, late: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const outcome = await Promise.race([
    work.then(
      () => 'done',
      () => 'done',
    ),
    deadline,
  ]);
  clearTimeout(timer);
  if (outcome === 'late') late();
}

/** Work to undo at stop, in reverse order of start. */
type Cleanup = () => Promise<void> | void;

/**
 * How a start is cancelled: `checkpoint()` between steps; `database(work)` resolves with a database
 * step's result or rejects as soon as the signal aborts (a connect to a hanging server included), as
 * closing the database fails that step anyway.
 */
export function cancellation(signal: AbortSignal | undefined) {
  const cancelled = new Promise<never>((_, reject) => {
    if (!signal) return;
    const cancel = () => reject(new StartCancelled('start cancelled'));
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
  });
  cancelled.catch(() => undefined);
  return {
    checkpoint: () => {
      if (signal?.aborted) throw new StartCancelled('start cancelled');
    },
    database: <T>(work: Promise<T>) => Promise.race([work, cancelled]),
  };
}

/**
 * Boots everything in order: database and migrations, plugins, toolkits (a broken file or a missing
 * directory refuses the start), sessions, the app, the listener, then the metrics listener.
 */
export async function startGateway(config: ServerConfig, given: Logger, options: GatewayOptions = {}): Promise<RunningGateway> {
  // Secret references read the environment as it is at start; every line the gateway writes is masked of their values.
  const secrets = new Secrets({ ...process.env });
  const log = maskedLogger(given, secrets.mask);
  const { checkpoint, database } = cancellation(options.signal);
  const cleanups: Cleanup[] = [];
  const undo = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  log.info('starting', { version: options.version, config: config.file ?? 'none', database: describeDatabase(config.db) });
  requireToolkitDirectory(config.toolkits.dir);
  const metrics = await createMetrics(config.metrics.enabled);
  const tracing = await createTracing(config.tracing, log, options.version);
  cleanups.push(() => tracing.close());
  const readiness: ReadinessState = { toolkitsLoaded: false, draining: false };
  const db = openDatabase(config.db);
  cleanups.push(() => settleWithin(db.destroy(), DATABASE_CLOSE_MS, () => log.warn('the database did not close in time')));
  try {
    const imported = await importPlugins(config.plugins);
    // The listener is made now and bound early only while the database is awaited (then it answers /healthz).
    let handle: RequestListener = answerWhileWaitingForDatabase;
    const listener = await createListener((req, res) => handle(req, res), config.server.tls, log);
    cleanups.push(() => listener.close());
    const server = listener.server;
    let listeningEarly = false;
    const listenEarly = async () => {
      await listen(server, config.server.host, config.server.port);
      listeningEarly = true;
      // Closed here if the start fails or is cancelled before the app serves (then the drain below closes it).
      cleanups.push(() => (handle === answerWhileWaitingForDatabase ? closeAtOnce(server) : undefined));
      log.info('waiting for the database; /healthz answers meanwhile', { host: config.server.host, port: (server.address() as AddressInfo).port });
    };
    // A cluster's primary waits for the database and migrates it; workers starting together must not race for the lock.
    if (options.worker) await database(options.worker.databaseReady?.(listenEarly) ?? Promise.resolve());
    else {
      await waitForDatabase(db, { log, database: describeDatabase(config.db), cancellable: database, onWaiting: listenEarly });
      const applied = await database(migrateToLatest(db)).catch((err: Error) => {
        throw err instanceof StartCancelled ? err : new Error(`database ${describeDatabase(config.db)}: ${err.message}`, { cause: err });
      });
      applied.push(...(await database(migratePlugins(db, imported))));
      if (applied.length > 0) log.info('database migrated', { applied });
      const sqliteFile = dialectOf(config.db).databaseFile(config.db);
      await database(reportRefusedWrites(db, log, { database: describeDatabase(config.db), ...(sqliteFile && { sqliteFile }) }));
    }

    const reads = openPreparedReads(db, config.db);
    cleanups.push(() => reads.close());
    const plugins = await registerPlugins(imported, { db, reads, log, options: config.plugin_options, metrics, secrets, fleet: fleetSettingsOf(config) });
    cleanups.push(() => plugins.close());
    checkpoint();
    const toolkitLog = options.worker && !options.worker.first ? demoted(log) : log;
    // What a reload tells at once (the schedules, made with the app: a new schedule gets its timer).
    const reloadListeners: Array<() => void> = [];
    const onInvalid = config.toolkits.on_invalid_at_start;
    const versions = new ToolkitVersions(db);
    await database(versions.learn());
    const toolkits = new ToolkitRegistry(config.toolkits.dir, db, plugins.types, toolkitLog, {
      maxFileBytes: config.toolkits.max_file_bytes,
      onReload: (outcome) => {
        metrics.reload(outcome.problems.length > 0 ? 'refused' : 'applied');
        for (const listener of reloadListeners) listener();
      },
      // One process of a cluster records (the others serve the same files).
      versions: { store: versions, lastGoodAtStart: onInvalid === 'last_good', record: !options.worker || options.worker.first },
      sinks: sinkNames(config),
    });
    cleanups.push(() => toolkits.recorded());
    const { problems } = await database(toolkits.load());
    if (problems.length > 0 && onInvalid === 'refuse') {
      throw new ConfigError(`${problems.length} problem(s) in toolkit files: ${problems.map(describeProblem).join('; ')}`);
    }
    readiness.toolkitsLoaded = true;
    readiness.refusedToolkitFiles = () => toolkits.refusedFiles;
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
    if (!options.worker && !options.offline) await database(announceSessions(db, config, log));
    cleanups.push(() => sessions.flush());
    // API keys are checked as sessions are: one indexed read, trusted as long as a session read (docs/scaling.md, "What each process caches").
    const apiKeys = new ApiKeyStore(new ApiKeyTable(db, reads), new SessionCache(freshness), policy.idleTimeoutMs / 10, log);
    cleanups.push(() => apiKeys.flush());
    metrics.sessions(() => countLiveSessions(db));

    const limiter = new LoginLimiter(db, config.auth.login_max_failures, config.auth.login_window_ms);
    const audit = new AuditTrail(db, { log, failed: () => metrics.auditWriteFailure() });
    const rateLimitCounters = await openRateLimitCounters(config, db, reads, log);
    cleanups.push(() => rateLimitCounters.close());
    const housekeeping = startHousekeeping(sessions, limiter, db, config, log);
    cleanups.push(() => clearInterval(housekeeping));

    const wakeups = await openWakeups(config, log);
    cleanups.push(() => wakeups.close());
    const internalCalls = new InternalCalls(config.server.base_url);
    const runs = new Runs({ config, db, registry: toolkits, log, audit, metrics, wakeups, internalCalls, ...(options.offline && { claims: false }) });
    const notifications = await Notifications.open({ config, db, registry: toolkits, log, metrics, secrets, instance: runs.instance });
    notifications?.attach(runs.transitions);

    const users = new UserDirectory(db, reads);
    // Workload tokens act as a configured user, read as an API key's owner is (trusted as long as a session read).
    const jwtIssuers = new JwtIssuers(config.auth.jwt_issuers, users, new SessionCache(freshness), log);
    // Triggers' `as` users likewise.
    const triggers = new Triggers(db, secrets, users, new SessionCache(freshness));
    const pluginMiddleware = plugins.middleware;
    const schedules = new Schedules({
      db,
      registry: toolkits,
      users,
      internalCalls,
      audit,
      metrics,
      log,
      ...(notifications && { fireEvents: (trx, event) => notifications.notifyScheduleEvent(trx, event) }),
    });
    reloadListeners.push(() => schedules.reloaded());
    const app = createApp({
      config,
      db,
      reads,
      sessions,
      apiKeys,
      jwtIssuers,
      internalCalls,
      fieldChoices: new FieldChoices(internalCalls),
      secretMask: secrets.mask,
      users,
      limiter,
      registry: toolkits,
      log,
      metrics,
      readiness,
      pluginMiddleware,
      audit,
      rateLimitCounters,
      tracing,
      runs,
      schedules,
      notifications,
      triggers,
      consoleDir: options.consoleDir,
      routes: [pluginRoutes(plugins.routes, { sessions, apiKeys, jwtIssuers, internalCalls })],
    });
    handle = app.callback();
    internalCalls.attach(handle);
    serveUpgrades(server, handle);
    if (!listeningEarly) await listen(server, config.server.host, config.server.port);
    cleanups.push(() => drain(server, log));
    // Undone before the listener drains: running runs get runs.drain_timeout, and followers' streams end.
    // Stopped after the runs (cleanups run in reverse): the ends of runs the stop drains are delivered meanwhile or by the next start.
    if (notifications && !options.offline) {
      notifications.start();
      cleanups.push(() => notifications.stop());
    }
    if (!options.offline) runs.start();
    cleanups.push(() => runs.stop());
    // Stopped before runs are: no fire starts a run while they drain.
    if (!options.offline) {
      await database(schedules.start());
      cleanups.push(() => schedules.stop());
    }
    checkpoint();

    if (metrics.registry && options.worker) await answerPrimaryScrapes(metrics.registry);
    else if (metrics.registry) {
      const listener = await serveMetrics(registrySource(metrics.registry), config.metrics.host, config.metrics.port, log);
      cleanups.push(() => listener.close());
      checkpoint();
    }

    const port = (server.address() as AddressInfo).port;
    const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
    const url = `${listener.scheme}://${host}:${port}${config.server.base_url}`;
    log.info(options.worker ? 'worker listening' : 'listening', {
      version: options.version,
      config: config.file ?? 'none',
      database: describeDatabase(config.db),
      toolkits_dir: config.toolkits.dir,
      toolkits: [...toolkits.snapshot.keys()].sort(),
      host: config.server.host,
      port,
      url,
    });
    return {
      url,
      port,
      sessions,
      toolkits,
      runs,
      users,
      rescan: async (reason) => {
        await listener.reloadCertificate(reason);
        const outcome = await toolkits.rescan(reason);
        toolkitLog.info('toolkits rescanned', { reason, toolkits: [...outcome.snapshot.keys()].sort(), problems: outcome.problems.length });
        return outcome;
      },
      stop: async () => {
        readiness.draining = true;
        if (config.server.shutdown_delay_ms > 0) {
          log.info('draining', { delay_ms: config.server.shutdown_delay_ms });
          await new Promise((resolve) => setTimeout(resolve, config.server.shutdown_delay_ms));
        }
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
export const describeDatabase = (db: ServerConfig['db']): string => dialectOf(db).address(db);

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
 * Purges expired sessions, stale failed-login keys and ended rate-limit windows, as often as a tenth of the idle timeout (1 s to 1 min).
 * Every instance does; a run never overlaps the previous one here, and concurrent runs elsewhere delete
 * by primary key in one order, with the expiry checked again, so they cannot deadlock or delete a live session.
 * Audit events past audit.retention go too, but only where the due purge is claimed: one instance at a time.
 */
function startHousekeeping(sessions: SessionStore, limiter: LoginLimiter, db: Database, config: ServerConfig, log: Logger): NodeJS.Timeout {
  const everyMs = Math.min(60_000, Math.max(1_000, config.sessions.idle_timeout_ms / 10));
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    Promise.all([
      sessions.purgeExpired().then((purged) => purged > 0 && log.debug('expired sessions purged', { purged })),
      limiter.sweep(),
      purgeAuditEvents(db, config.audit.retention_ms).then((purged) => purged !== undefined && log.info('audit events purged', { purged })),
      config.rate_limits.store === 'database' && sweepRateLimits(db),
    ])
      .catch((err) => log.warn('housekeeping failed', describeDatabaseError(err)))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return timer;
}

/** Where rate-limit budgets are counted: Redis is connected now (or retried in the background while down). */
function openRateLimitCounters(config: ServerConfig, db: Database, reads: PreparedReads, log: Logger): Promise<RateLimitCounters> | RateLimitCounters {
  if (config.rate_limits.store === 'redis') return redisCounters(config.rate_limits.redis_url, config.db.timeout_ms, log);
  return databaseCounters(db, reads);
}

/** Live sessions in the database (tkgate_sessions), counted when metrics are scraped. */
async function countLiveSessions(db: Database): Promise<number> {
  const row = await db('sessions').where('expires_at', '>', Date.now()).count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/** Stops accepting; waits for in-flight requests (closing keep-alive connections as they go idle). */
/** Closes a listener that served only /healthz and /readyz while the start waited: nothing to drain. */
function closeAtOnce(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return closed;
}

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

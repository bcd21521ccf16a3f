import cluster, { type Worker } from 'node:cluster';
import type { ServerConfig } from '../config/server-config.js';
import { openDatabase } from '../db/connect.js';
import { migrateWithPlugins } from '../plugins/plugin-migrations.js';
import { waitForDatabase } from '../db/wait-for-database.js';
import { announceSessions, cancellation, describeDatabase, startGateway, StartCancelled, type GatewayOptions } from '../gateway.js';
import { scopedLogger, type Logger } from '../log.js';
import type { ReloadOutcome } from '../toolkits/toolkit-registry.js';
import { clusterSource } from '../ops/cluster-metrics.js';
import { serveMetrics } from '../ops/metrics-server.js';

/** What `tkgate start` runs until a signal: one gateway, or a primary with its workers. */
export interface Serving {
  readonly url: string;
  readonly port: number;
  /** Rescans the toolkit files (SIGHUP); a primary passes the signal on to each worker, which rescans its own. */
  rescan(reason: string): Promise<ReloadOutcome | void>;
  /** Drains everything (every worker) and resolves once it is all closed. */
  stop(): Promise<void>;
}

/**
 * What `tkgate start` passes on: the version for the start-up lines, the signal that cancels a start, and
 * the configuration's environment variables it withdrew from this process, which workers read again.
 */
export type ServeOptions = Pick<GatewayOptions, 'version' | 'signal'> & { workerEnv?: Record<string, string> };

const SLOT_ENV = 'TKGATE_WORKER_SLOT';
const LISTENING = 'tkgate:listening';
/** A worker asks the primary where the database stands; the primary answers, and tells it again when that changes. */
const DATABASE_QUERY = 'tkgate:database?';
const DATABASE_STATE = 'tkgate:database';
/** A worker that dies this soon after its start is replaced only after a pause, so a crash loop does not spin. */
const QUICK_DEATH_MS = 5_000;
const RESTART_PAUSE_MS = 1_000;

interface ListeningMessage {
  type: typeof LISTENING;
  port: number;
  url: string;
  toolkits: string[];
}

/** `awaited`: the primary waits for the database (the worker listens meanwhile); `ready`: reached and migrated. */
interface DatabaseMessage {
  type: typeof DATABASE_STATE;
  state: 'awaited' | 'ready';
}

/**
 * `server.workers` (docs/scaling.md, "Workers"): with more than one, this process becomes the primary of a node:cluster
 * that forks the workers; each worker runs a whole gateway (its own database pool, plugins, spawn helpers,
 * toolkit watcher) on the shared port. Everything they share lives in the database.
 */
export function serve(config: ServerConfig, log: Logger, options: ServeOptions = {}): Promise<Serving> {
  if (cluster.isWorker) return serveAsWorker(config, log, options);
  if (config.server.workers > 1) return serveAsPrimary(config, log, options);
  return startGateway(config, log, options);
}

async function serveAsWorker(config: ServerConfig, log: Logger, options: ServeOptions): Promise<Serving> {
  const slot = Number(process.env[SLOT_ENV] ?? 0);
  // Every line of a worker names it; a scoped logger keeps the access line's prepared JSON members (log.ts,
  // JsonMembers) members of the line (spread into an object, they became one escaped string).
  const gateway = await startGateway(config, scopedLogger(log, { worker: slot + 1 }), {
    ...options,
    worker: { id: slot + 1, first: slot === 0, databaseReady: databaseFromPrimary },
  });
  const message: ListeningMessage = { type: LISTENING, port: gateway.port, url: gateway.url, toolkits: [...gateway.toolkits.snapshot.keys()] };
  process.send!(message);
  return {
    url: gateway.url,
    port: gateway.port,
    rescan: (reason) => gateway.rescan(reason),
    // The IPC channel to the primary would keep this process alive once drained.
    stop: () => gateway.stop().finally(() => cluster.worker?.disconnect()),
  };
}

/**
 * A worker's wait for the primary's database (GatewayOptions.worker.databaseReady): asks where it stands, listens
 * early (`onAwaited`) when the primary waits for it, and resolves once it is ready.
 */
function databaseFromPrimary(onAwaited: () => Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    let listening: Promise<void> | undefined;
    const onMessage = (message: DatabaseMessage) => {
      if (message?.type !== DATABASE_STATE) return;
      if (message.state === 'awaited') listening ??= onAwaited();
      else {
        process.off('message', onMessage);
        (listening ?? Promise.resolve()).then(resolve, reject);
      }
    };
    process.on('message', onMessage);
    process.send!({ type: DATABASE_QUERY });
  });
}

/**
 * Migrations (core's and the plugins') and the start-up session work run once, here, while the workers wait
 * before touching the database; `onWaiting` is told when the database has to be waited for.
 */
async function prepareDatabase(config: ServerConfig, log: Logger, signal: AbortSignal | undefined, onWaiting: () => void): Promise<void> {
  const db = openDatabase(config.db);
  try {
    // As a single gateway does; the workers answer /healthz meanwhile.
    await waitForDatabase(db, {
      log,
      database: describeDatabase(config.db),
      cancellable: cancellation(signal).database,
      onWaiting: async () => {
        log.info('waiting for the database; the workers answer /healthz meanwhile');
        onWaiting();
      },
    });
    const applied = await migrateWithPlugins(db, config.plugins);
    if (applied.length > 0) log.info('database migrated', { applied });
    await announceSessions(db, config, log);
  } finally {
    await db.destroy();
  }
}

async function serveAsPrimary(config: ServerConfig, log: Logger, options: ServeOptions): Promise<Serving> {
  log.info('starting', { version: options.version, config: config.file ?? 'none', database: describeDatabase(config.db), workers: config.server.workers });
  const count = config.server.workers;
  const workers = new Map<number, Worker>();
  let stopping = false;
  // Where the database stands, for the workers: they start at once and wait for it to be ready, listening meanwhile
  // when the primary has to wait for it (then /healthz answers, as it does for a single gateway).
  let databaseState: DatabaseMessage['state'] | undefined;
  const asking = new Set<Worker>();
  const tell = (worker: Worker) => {
    if (databaseState === undefined || !worker.isConnected()) return;
    worker.send({ type: DATABASE_STATE, state: databaseState } satisfies DatabaseMessage);
    if (databaseState === 'ready') asking.delete(worker);
  };
  const databaseIs = (state: DatabaseMessage['state']) => {
    databaseState = state;
    for (const worker of asking) tell(worker);
  };

  const fork = (slot: number): Promise<ListeningMessage> => {
    const worker = cluster.fork({ ...options.workerEnv, [SLOT_ENV]: String(slot) });
    const startedAt = Date.now();
    let listened = false;
    workers.set(slot, worker);
    worker.on('message', (message: { type?: unknown }) => {
      if (message?.type !== DATABASE_QUERY) return;
      asking.add(worker);
      tell(worker);
    });
    worker.once('exit', (code, signal) => {
      asking.delete(worker);
      if (workers.get(slot) === worker) workers.delete(slot);
      if (stopping || !listened) return;
      const pause = Date.now() - startedAt < QUICK_DEATH_MS ? RESTART_PAUSE_MS : 0;
      log.warn('worker died; starting another', { worker: slot + 1, pid: worker.process.pid, code, signal });
      setTimeout(() => replace(slot), pause).unref();
    });
    return new Promise((resolve, reject) => {
      worker.on('message', (message: ListeningMessage) => {
        if (message?.type !== LISTENING) return;
        listened = true;
        resolve(message);
      });
      worker.once('exit', (code, signal) => reject(new Error(`worker ${slot + 1} exited (${code ?? signal}) before listening`)));
    });
  };

  const replace = (slot: number): void => {
    if (stopping) return;
    fork(slot).then(
      () => log.info('worker replaced', { worker: slot + 1, pid: workers.get(slot)?.process.pid }),
      (err: Error) => stopping || log.error('worker replacement failed', { worker: slot + 1, reason: err.message }),
    );
  };

  let metricsListener: { close(): Promise<void> | void } | undefined;
  const stop = async (): Promise<void> => {
    stopping = true;
    const exits = [...workers.values()].map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.isDead()) return resolve();
          worker.once('exit', () => resolve());
          worker.process.kill('SIGTERM');
        }),
    );
    await Promise.all(exits);
    await metricsListener?.close();
    log.info('stopped', { workers: count });
  };

  let first: ListeningMessage;
  try {
    const listening = Promise.all(Array.from({ length: count }, (_, slot) => fork(slot)));
    // A worker that dies before listening ends the start, also while the database is awaited.
    await Promise.race([prepareDatabase(config, log, options.signal, () => databaseIs('awaited')), listening]);
    if (options.signal?.aborted) throw new StartCancelled('start cancelled');
    databaseIs('ready');
    [first] = (await listening) as [ListeningMessage];
    // One scrape covers every worker: the primary asks each for its registry (prom-client's AggregatorRegistry).
    if (config.metrics.enabled) metricsListener = await serveMetrics(await clusterSource(), config.metrics.host, config.metrics.port, log);
  } catch (err) {
    await stop();
    throw err;
  }
  log.info('listening', {
    version: options.version,
    config: config.file ?? 'none',
    database: describeDatabase(config.db),
    toolkits_dir: config.toolkits.dir,
    toolkits: [...first.toolkits].sort(),
    host: config.server.host,
    port: first.port,
    url: first.url,
    workers: count,
  });
  const rescan = async (reason: string): Promise<void> => {
    log.info('toolkit rescan passed to the workers', { reason });
    for (const worker of workers.values()) worker.process.kill('SIGHUP');
  };
  return { url: first.url, port: first.port, rescan, stop };
}

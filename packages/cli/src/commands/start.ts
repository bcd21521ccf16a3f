import { ConfigError, createLogger, keepSqliteOwner, serve, StartCancelled, withdrawConfigEnvironment, type Logger, type Serving } from '@tkgate/core';
import { makeGatewayNotDumpable } from '@tkgate/plugin-exec';
import { UsageError } from '../cli-error.js';
import { VERSION } from '../version.js';
import type { Command } from './command.js';
import { configFrom } from './context.js';

function portOverride(port: string | boolean | undefined): Record<string, unknown> {
  if (port === undefined) return {};
  if (typeof port !== 'string' || !/^\d{1,5}$/.test(port) || Number(port) > 65535) {
    throw new UsageError(`--port must be a number from 0 to 65535, got ${JSON.stringify(port)}`);
  }
  return { 'server.port': Number(port) };
}

/**
 * The process's signals, listened to before anything else starts: SIGTERM and SIGINT stop (during
 * start-up too), SIGHUP rescans the toolkit files and reloads the TLS certificate, SIGUSR2 is logged and ignored; none kills unlogged.
 * A cluster primary (server.workers > 1) forwards SIGHUP to its workers, which call `gateway.rescan`.
 */
function listenForSignals() {
  const stopping = new AbortController();
  let stopSignal: NodeJS.Signals | undefined;
  let log: Logger | undefined;
  let gateway: Serving | undefined;
  const stop = (signal: NodeJS.Signals) => {
    stopSignal ??= signal;
    stopping.abort();
  };
  const rescan = () => {
    if (!gateway) return log?.info('SIGHUP ignored: still starting (the start reads every toolkit file)');
    gateway.rescan('SIGHUP').catch((err) => log?.error('toolkit rescan failed', { err }));
  };
  const ignore = (signal: NodeJS.Signals) => log?.info('signal ignored', { signal });
  const handlers: Array<[NodeJS.Signals, () => void]> = [
    ['SIGTERM', () => stop('SIGTERM')],
    ['SIGINT', () => stop('SIGINT')],
    ['SIGHUP', rescan],
    ['SIGUSR2', () => ignore('SIGUSR2')],
  ];
  for (const [signal, handler] of handlers) process.on(signal, handler);
  return {
    signal: stopping.signal,
    stopped: new Promise<NodeJS.Signals>((resolve) => stopping.signal.addEventListener('abort', () => resolve(stopSignal!), { once: true })),
    attach(logger: Logger, running?: Serving) {
      log = logger;
      gateway = running;
    },
    signalName: () => stopSignal,
  };
}

/** Runs until SIGTERM or SIGINT, then drains in-flight requests (in every worker), flushes sessions and exits 0. */
export const start: Command = {
  name: 'start',
  usage: 'start [--config FILE] [--port N]',
  summary: 'migrate the database, load plugins and toolkits, and serve (SIGTERM drains, SIGHUP rescans toolkits and reloads the TLS certificate)',
  options: { port: { type: 'string' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const signals = listenForSignals();
    const config = configFrom(values, portOverride(values.port));
    // Read: out of the environment, where the commands of exec endpoints could find them (docs/operating.md).
    const withdrawn = withdrawConfigEnvironment();
    const log = createLogger(config.log.level);
    if (!withdrawn.hidden) log.warn("the configuration's environment variables stay readable in /proc/<pid>/environ", { pid: process.pid });
    // Its other variables: the process is closed to other processes of its user (the primary of server.workers too).
    if (config.plugins.includes('@tkgate/plugin-exec')) makeGatewayNotDumpable(log);
    signals.attach(log);
    // Run as root on the service user's SQLite file: what the start creates (the file on a first run, its -wal and
    // -shm, kept while the gateway runs) is given to that user once it serves, and again once it stopped.
    const restoreOwner = keepSqliteOwner(config.db);
    let gateway: Serving;
    try {
      gateway = await serve(config, log, { version: VERSION, signal: signals.signal, workerEnv: withdrawn.values });
    } catch (err) {
      restoreOwner();
      if (err instanceof StartCancelled) {
        log.info('stopped during start-up', { signal: signals.signalName() });
        // Everything started is closed; only a connect to a database that never answers may be left,
        // and it would hold the process until its own timeout.
        process.exit(0);
      }
      throw err instanceof ConfigError ? err : new Error(`cannot start: ${(err as Error).message}`);
    }
    restoreOwner();
    signals.attach(log, gateway);
    const signal = await signals.stopped;
    log.info('stopping', { signal });
    await gateway.stop();
    restoreOwner();
    return 0;
  },
};

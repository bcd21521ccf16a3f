import { ConfigError, createLogger, serve } from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { configFrom } from './context.js';

function portOverride(port: string | boolean | undefined): Record<string, unknown> {
  if (port === undefined) return {};
  if (typeof port !== 'string' || !/^\d{1,5}$/.test(port) || Number(port) > 65535) {
    throw new UsageError(`--port must be a number from 0 to 65535, got ${JSON.stringify(port)}`);
  }
  return { 'server.port': Number(port) };
}

/** Runs until SIGTERM or SIGINT, then drains in-flight requests (in every worker), flushes sessions and exits 0. */
export const start: Command = {
  name: 'start',
  usage: 'start [--config FILE] [--port N]',
  summary: 'migrate the database, load plugins and toolkits, and serve',
  options: { port: { type: 'string' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const config = configFrom(values, portOverride(values.port));
    const log = createLogger(config.log.level);
    const gateway = await serve(config, log).catch((err: unknown) => {
      throw err instanceof ConfigError ? err : new Error(`cannot start: ${(err as Error).message}`);
    });
    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    log.info('stopping', { signal });
    await gateway.stop();
    return 0;
  },
};

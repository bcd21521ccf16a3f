import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger, loadServerConfig, startGateway as startCoreGateway } from '@tkgate/core';
import { gatewayDefaults, writeConfig, type GatewayProcess, type StartOptions } from './gateway-process.js';
import { repoRoot, tempDir } from './paths.js';

/** The version `tkgate start` reports (the CLI package's). */
const version = (JSON.parse(readFileSync(path.join(repoRoot, 'packages/cli/package.json'), 'utf8')) as { version: string }).version;

/**
 * A gateway started inside this process through @tkgate/core's `startGateway`, as `tkgate start` would
 * start it (the same configuration file, loaded the same way), with its log lines kept in memory. It has
 * the interface of a `tkgate start` child process: a suite that needs the process itself (signals,
 * workers, exit codes, stderr, `child`, environment variables) starts one of those instead
 * (withGateway's `process: true`).
 */
export async function startInProcess({ config, cwd, format }: Pick<StartOptions, 'config' | 'cwd' | 'format'>): Promise<GatewayProcess> {
  const dir = cwd ?? tempDir();
  const file = writeConfig({ ...gatewayDefaults(), ...config }, dir, format);
  const loaded = loadServerConfig({ file, cwd: dir });
  const logs: Array<Record<string, unknown>> = [];
  let raw = '';
  const log = createLogger(loaded.log.level, (line) => {
    raw += `${line}\n`;
    logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  const gateway = await startCoreGateway(loaded, log, { version }).catch((err: Error) => {
    throw new Error(`the gateway did not start: ${err.message}\n${raw}`, { cause: err });
  });
  let stopped: Promise<number | string> | undefined;
  return {
    base: gateway.url,
    port: gateway.port,
    logs,
    output: () => raw,
    get child(): ChildProcess {
      throw new Error('this gateway runs inside the test process: start the suite with withGateway(..., { process: true }) to have a child');
    },
    // A signal is meaningless here: every stop is the graceful one SIGTERM starts, and it ends like exit code 0.
    stop: () => (stopped ??= gateway.stop().then(() => 0)),
  };
}

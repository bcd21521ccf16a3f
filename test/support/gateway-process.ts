import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { tempDir, tkgateBin } from './paths.js';

/** A real `tkgate start` child process, with its JSON log lines collected. */
export interface GatewayProcess {
  readonly base: string;
  readonly port: number;
  readonly logs: Array<Record<string, unknown>>;
  readonly output: () => string;
  readonly child: ChildProcess;
  /** Sends the signal and resolves with the exit code (or the signal's name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface StartOptions {
  config: Record<string, unknown>;
  env?: Record<string, string>;
  cwd?: string;
  extraArgs?: string[];
  /** The configuration file's format (by its extension). */
  format?: 'json' | 'yaml';
  /** Another script and its arguments instead of `tkgate start --config <the written file>` (which is then not written). */
  command?: string[];
  /** Runs the gateway as this user and group (the test runs as root): what it reads must be theirs to read. */
  user?: { uid: number; gid: number };
}

export function writeConfig(config: Record<string, unknown>, dir = tempDir(), format: 'json' | 'yaml' = 'json'): string {
  const file = path.join(dir, `tkgate.${format}`);
  writeFileSync(file, format === 'yaml' ? toYaml(config) : JSON.stringify(config, null, 2));
  return file;
}

/**
 * What every test gateway starts with: port 0 for the server and the metrics listener (parallel test runs
 * never collide), and an empty toolkits.dir of its own (a directory that does not exist stops the start).
 */
export const gatewayDefaults = () => ({ server: { port: 0 }, toolkits: { dir: tempDir('tkgate-toolkits-'), watch: false }, metrics: { port: 0 } });

/**
 * The defaults under a suite's config; `server` and `metrics` merged key by key, so a suite that sets
 * `server.workers` still listens on a free port (a whole `server` object once replaced port 0 with 8080, which
 * another suite may hold).
 */
function withDefaults(config: Record<string, unknown>): Record<string, unknown> {
  const defaults = gatewayDefaults();
  const section = (key: 'server' | 'metrics') => ({ ...defaults[key], ...(config[key] as Record<string, unknown> | undefined) });
  return { ...defaults, ...config, server: section('server'), metrics: section('metrics') };
}

export function startGateway({ config, env = {}, cwd, extraArgs = [], format, command, user }: StartOptions): Promise<GatewayProcess> {
  const dir = cwd ?? tempDir();
  const args = command ?? [tkgateBin, 'start', '--config', writeConfig(withDefaults(config), dir, format), ...extraArgs];
  const child = spawn(process.execPath, args, {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...user,
  });
  const logs: Array<Record<string, unknown>> = [];
  let raw = '';
  let pending = '';
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));

  return new Promise((resolve, reject) => {
    // Generous: a cluster of workers starting on a shared 2-core machine under load took over 15 s.
    const timer = setTimeout(() => fail(new Error('tkgate did not start within 30 s')), 30_000);
    function fail(err: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\n${raw}`));
    }
    child.stderr!.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      raw += chunk.toString();
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (!line.trim()) continue;
        if (!line.startsWith('{')) continue; // a command's own output before the gateway starts (example setup)
        const record = JSON.parse(line) as Record<string, unknown>;
        logs.push(record);
        if (record.msg === 'listening') {
          clearTimeout(timer);
          resolve({
            base: String(record.url),
            port: Number(record.port),
            logs,
            output: () => raw,
            child,
            stop: (signal = 'SIGTERM') => {
              if (child.exitCode === null && child.signalCode === null) child.kill(signal);
              return exited;
            },
          });
        }
      }
    });
    void exited.then((code) => fail(new Error(`tkgate exited (${code}) before listening`)));
  });
}

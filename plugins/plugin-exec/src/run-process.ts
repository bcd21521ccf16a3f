import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { killGroup, killMarkedAndWait } from './process-groups.js';

/** The variable marking every process of one run (run-process.ts, docs/toolkits.md). */
export const RUN_MARK_VARIABLE = 'TKGATE_EXEC_RUN';

/** Linux's limit on one argument (MAX_ARG_STRLEN, 32 pages), including its terminating NUL. */
export const MAX_ARGUMENT_BYTES = 131_072 - 1;
/**
 * How long a command's pipes are read after it exited (or was killed) before they are closed: what it wrote is
 * in them already; a process it left that holds them (a daemon with the command's stdout) must not hold the
 * run open (docs/toolkits.md).
 */
export const PIPE_DRAIN_MS = 500;
/** How much of stderr is kept for the log. */
const STDERR_KEPT_BYTES = 16_384;

export interface ProcessSpec {
  file: string;
  args: string[];
  cwd?: string;
  env: Record<string, string>;
  /** Written to stdin, then stdin is closed; without it stdin is /dev/null. */
  stdin?: string;
  timeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
  /** Told the command's pid (= its process group) as soon as it runs. */
  onStart?: (pid: number) => void;
}

export type ProcessOutcome =
  /** stdout stays bytes here: off the V8 heap, so a large output never exhausts a small helper's heap. */
  | { ok: true; stdout: Uint8Array; stderr: string }
  | {
      ok: false;
      reason: 'exit_code' | 'signal' | 'timeout' | 'output_too_large' | 'spawn_failed' | 'aborted';
      exitCode?: number;
      signal?: string;
      stderr: string;
      cause?: Error;
    };

/**
 * Runs one command in its own process group. On timeout, output over the limit, or the client leaving,
 * the whole group is killed; once the command exits, whatever it left running in its group is killed
 * too, and so is whatever it daemonised out of its group and session (found by the run's mark in its
 * environment, RUN_MARK_VARIABLE), so no request leaves processes behind. The outcome is told once they
 * are all gone.
 */
export function runProcess(spec: ProcessSpec): Promise<ProcessOutcome> {
  return new Promise((resolve) => {
    let child;
    const mark = `${RUN_MARK_VARIABLE}=${randomUUID()}`;
    try {
      child = spawn(spec.file, spec.args, {
        cwd: spec.cwd,
        env: { ...spec.env, [RUN_MARK_VARIABLE]: mark.slice(RUN_MARK_VARIABLE.length + 1) },
        detached: true,
        stdio: [spec.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
    } catch (err) {
      resolve({ ok: false, reason: 'spawn_failed', stderr: '', cause: err as Error });
      return;
    }
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let stopped: 'timeout' | 'output_too_large' | 'aborted' | undefined;
    let spawnError: Error | undefined;

    const pid = child.pid;
    if (pid) spec.onStart?.(pid);
    const killOwnGroup = () => {
      if (pid) killGroup(pid);
    };
    /** Once the command has exited: its group, then everything marked as the run's, daemons among them. */
    let treeKilled: Promise<unknown> = Promise.resolve();
    const killTree = () => {
      killOwnGroup();
      treeKilled = killMarkedAndWait(mark);
    };
    const stop = (why: 'timeout' | 'output_too_large' | 'aborted') => {
      stopped ??= why;
      killOwnGroup();
    };
    const timer = setTimeout(() => stop('timeout'), spec.timeoutMs);
    const onAbort = () => stop('aborted');
    spec.signal.addEventListener('abort', onAbort, { once: true });
    if (spec.signal.aborted) stop('aborted');

    child.stdout!.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > spec.maxOutputBytes) stop('output_too_large');
      else stdout.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < STDERR_KEPT_BYTES) stderr += chunk.toString('utf8').slice(0, STDERR_KEPT_BYTES - stderr.length);
    });
    if (spec.stdin !== undefined) {
      // A command that does not read its stdin closes the pipe early; that is not an error.
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(spec.stdin);
    }
    child.once('error', (err) => (spawnError = err));
    let drain: NodeJS.Timeout | undefined;
    child.once('exit', () => {
      killTree();
      drain = closePipesSoon(child);
    });
    child.once('close', async (code, signal) => {
      clearTimeout(timer);
      clearTimeout(drain);
      spec.signal.removeEventListener('abort', onAbort);
      await treeKilled;
      if (spawnError) resolve({ ok: false, reason: 'spawn_failed', stderr, cause: spawnError });
      else if (stopped) resolve({ ok: false, reason: stopped, stderr });
      else if (signal) resolve({ ok: false, reason: 'signal', signal, stderr });
      else if (code !== 0) resolve({ ok: false, reason: 'exit_code', exitCode: code ?? -1, stderr });
      else resolve({ ok: true, stdout: stdout.length === 1 ? stdout[0]! : Buffer.concat(stdout, stdoutBytes), stderr });
    });
  });
}

/**
 * Once the command has exited: its pipes are read for PIPE_DRAIN_MS more, then closed, whoever else holds them.
 * The close waits for one more turn of the event loop (setImmediate runs after its poll phase), so that what is
 * already in a pipe is read even when the loop was too busy to read it before the timer fired.
 */
export function closePipesSoon(child: ChildProcess): NodeJS.Timeout {
  return setTimeout(
    () =>
      setImmediate(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }),
    PIPE_DRAIN_MS,
  );
}

import { spawn } from 'node:child_process';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { AdmissionGate, DetachedOutcome, DetachedPlan, DetachedRun, DryRun, DryRunOutcome, OutputSink, PluginSecrets } from '@tkgate/core';
import { CONTEXT_VARIABLE, DEFAULT_MAX_QUEUED, maxOutputOf, timeoutOf, type ExecConfig } from './exec-config.js';
import { argv, configuredEnv, contextPlaces, gatewayPath, limitedBySize, stdoutData } from './exec-endpoint.js';
import { killGroup } from './process-groups.js';
import { closePipesSoon, MAX_ARGUMENT_BYTES } from './run-process.js';
import type { GroupWatch } from './spawn-pool.js';

/** How often a run waiting for a place of max_processes looks again while the calls' queue is full. */
const PLACE_RETRY_MS = 250;

/**
 * An exec endpoint with `run: async` runs as a job: its queue's limits, and `room`, the places of
 * max_processes free on this instance (runs and calls share them).
 */
export function execPlan(config: ExecConfig, room?: () => number): DetachedPlan | undefined {
  if (config.run !== 'async') return undefined;
  return {
    room,
    maxConcurrency: config.max_concurrency,
    maxQueued: config.max_queued ?? DEFAULT_MAX_QUEUED,
    maxOutputBytes: maxOutputOf(config),
    concurrencyKey: config.concurrency_key,
    viewPower: config.runs?.view_power,
    cancelPower: config.runs?.cancel_power,
  };
}

/** Sends a signal to a process group (the command and what it started in it); a group already gone is fine. */
function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Gone already.
  }
}

/** One of a run's output streams as the sink gets it: secret values masked as `***`, also when split across chunks. */
function maskedStream(output: OutputSink, stream: 'stdout' | 'stderr', secrets: PluginSecrets) {
  const pass = (text: string) => text !== '' && output.write(stream, Buffer.from(text, 'utf8'));
  // What the mask holds back is passed on at a pause: a waiting command shows its last line (docs/secrets.md).
  const mask = secrets.maskStream(pass);
  const decoder = new StringDecoder('utf8');
  return {
    write: (chunk: Buffer) => pass(mask.push(decoder.write(chunk))),
    end: () => pass(mask.push(decoder.end()) + mask.end()),
  };
}

/** What a run's command needs of the plugin besides its run. */
export interface RunServices {
  /** Secret values of env, and the mask of what the command prints of them. */
  secrets: PluginSecrets;
  /** plugin_options max_processes: a run holds a place as a call does. */
  processes: AdmissionGate;
  /** The spawn helpers kill the run's process group if the gateway dies (spawn-pool.ts). */
  groups: GroupWatch;
}

/**
 * Runs one run of an exec endpoint, in a place of max_processes (as a call), spawned here rather than through
 * the spawn helpers: a run lives for minutes
 * and streams its output as it comes, where the helpers answer a command's output at its end. The command gets its
 * own process group; stdout and stderr go to the run's sink as they come (stdout is also kept, up to
 * max_output_bytes, for `result`). Timeout or stop: SIGTERM to the group, SIGKILL `graceMs` later (at once for a
 * stop with no grace). Once the command exits, whatever it left in its group is killed, and the run ends once its
 * pipes are drained (PIPE_DRAIN_MS at most: a daemon holding them does not hold the run). Unlike a call, what it
 * daemonised out of its group is not searched for: that search reads every process's environment, work the
 * spawn helpers do off the gateway's event loop but a run's end would do on it. The spawn helpers watch the
 * group while it runs, and kill it if the gateway dies (docs/runs.md).
 */
export async function runDetachedCommand(run: DetachedRun<ExecConfig>, services: RunServices): Promise<DetachedOutcome> {
  const leave = await processPlace(services.processes, run.signal);
  if (!leave) return { status: 'failed' }; // stopped while waiting: core says cancelled (or gateway_stopped)
  try {
    return await runCommand(run, services);
  } finally {
    leave();
  }
}

/**
 * A place among plugin_options max_processes, held while the command runs: a run counts as a call does. Core
 * claims a run only where one is free (`room`), but a call may take it meanwhile: then the run waits in the calls'
 * queue (looking again while that queue is full) until a place frees or the run is stopped (undefined).
 */
async function processPlace(processes: AdmissionGate, signal: AbortSignal): Promise<(() => void) | undefined> {
  const free = processes.tryEnter();
  if (free) return free;
  while (!signal.aborted) {
    try {
      return await processes.enter(signal);
    } catch {
      if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, PLACE_RETRY_MS));
    }
  }
  return undefined;
}

function runCommand(run: DetachedRun<ExecConfig>, { secrets, groups }: RunServices): Promise<DetachedOutcome> {
  const { config, output } = run;
  const context = JSON.stringify(run.context);
  const oversized = Buffer.byteLength(context) > MAX_ARGUMENT_BYTES;
  if (oversized && limitedBySize(config) && !config.stdin) {
    output.write(
      'stderr',
      Buffer.from(`tkgate: the request context is ${Buffer.byteLength(context)} bytes, over the argument limit; the endpoint may set stdin: true\n`),
    );
    return Promise.resolve({ status: 'failed' });
  }
  const places = contextPlaces(config, context, oversized);
  const [file, args] = argv(config, places.argument);
  const maxKept = maxOutputOf(config);
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(file, args, {
        cwd: config.cwd,
        env: {
          PATH: gatewayPath(),
          ...configuredEnv(config, secrets),
          ...(places.variable !== undefined && { [CONTEXT_VARIABLE]: places.variable }),
          TKGATE_RUN_ID: run.runId,
        },
        detached: true,
        stdio: [places.stdin !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      output.write('stderr', Buffer.from(`tkgate: ${path.basename(file)} could not be started: ${(err as Error).message}\n`));
      resolve({ status: 'failed' });
      return;
    }
    const pid = child.pid;
    if (pid) groups.watch(pid);
    const stdout: Buffer[] = [];
    let kept = 0;
    let timedOut = false;
    let spawnError: Error | undefined;
    let killer: NodeJS.Timeout | undefined;
    const stop = (graceMs: number) => {
      if (!pid) return;
      signalGroup(pid, 'SIGTERM');
      clearTimeout(killer);
      killer = setTimeout(() => killGroup(pid), graceMs);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop(run.graceMs());
    }, timeoutOf(config));
    const onStop = () => stop(run.graceMs());
    run.signal.addEventListener('abort', onStop, { once: true });
    if (run.signal.aborted) onStop();

    const printed = maskedStream(output, 'stdout', secrets);
    const complained = maskedStream(output, 'stderr', secrets);
    child.stdout!.on('data', (chunk: Buffer) => {
      printed.write(chunk);
      if (kept < maxKept) {
        stdout.push(chunk.subarray(0, maxKept - kept));
        kept += Math.min(chunk.length, maxKept - kept);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => complained.write(chunk));
    if (places.stdin !== undefined) {
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(places.stdin);
    }
    child.once('error', (err) => (spawnError = err));
    let drain: NodeJS.Timeout | undefined;
    child.once('exit', () => {
      if (pid) killGroup(pid);
      drain = closePipesSoon(child);
    });
    child.once('close', (code, signal) => {
      if (pid) groups.unwatch(pid);
      clearTimeout(timer);
      clearTimeout(killer);
      clearTimeout(drain);
      run.signal.removeEventListener('abort', onStop);
      printed.end();
      complained.end();
      if (spawnError) {
        output.write('stderr', Buffer.from(`tkgate: ${path.basename(file)} could not be started: ${spawnError.message}\n`));
        resolve({ status: 'failed' });
      } else if (timedOut) resolve({ status: 'timed_out', signal: signal ?? undefined, exitCode: code ?? undefined });
      else if (signal) resolve({ status: 'failed', signal });
      else if (code !== 0) resolve({ status: 'failed', exitCode: code ?? -1 });
      else resolve({ status: 'succeeded', exitCode: 0, result: stdoutData(Buffer.concat(stdout, kept).toString('utf8'), secrets) });
    });
  });
}

/** A dry run ends within this (or the endpoint's timeout, when shorter): approvers wait for what it prints. */
const DRY_RUN_TIMEOUT_MS = 300_000;

/**
 * Runs an endpoint's `approval.dry_run` as a run of its own: the endpoint's environment, working directory and
 * context placement, the dry run's command; what it prints (masked as a run's output is) kept up to `maxOutputBytes`.
 */
export async function dryRunCommand(run: DryRun<ExecConfig>, services: RunServices): Promise<DryRunOutcome> {
  const parts: Buffer[] = [];
  let kept = 0;
  const output: OutputSink = {
    write: (_stream, bytes) => {
      if (kept >= run.maxOutputBytes) return;
      const part = Buffer.from(bytes.subarray(0, run.maxOutputBytes - kept));
      parts.push(part);
      kept += part.length;
    },
  };
  const command = typeof run.command === 'string' ? run.command : [...run.command];
  const config: ExecConfig = { ...run.config, command, max_output_bytes: run.maxOutputBytes, timeout: Math.min(timeoutOf(run.config), DRY_RUN_TIMEOUT_MS) };
  const outcome = await runDetachedCommand(
    { config, context: run.context, runId: run.runId, requestId: '', endpoint: run.endpoint, log: run.log, output, signal: run.signal, graceMs: () => 1_000 },
    services, // a dry run is a process as a run is: it waits for a place of max_processes
  );
  return { status: outcome.status, ...(outcome.exitCode !== undefined ? { exitCode: outcome.exitCode } : {}), output: Buffer.concat(parts).toString('utf8') };
}

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from '@tkgate/core';
import { remoteCommand, ReportFilter, type WrapperReports } from './remote-command.js';
import type { RunDirectory } from './run-directory.js';
import { knownHostsText, sshConfigText, type Hop, type Identity } from './ssh-config.js';

/** Why a node ended other than by its command's own exit (docs/fleet.md, "Parallelism and failures"). */
export type NodeReason =
  | 'unreachable'
  | 'auth_failed'
  | 'host_key_unknown'
  | 'host_key_mismatch'
  | 'connection_lost'
  | 'node_timeout'
  | 'cancelled_by'
  | 'max_failures'
  | (string & {});

/** A stop asked of a node: by a cancel (`cancelled`, `cancelled_by`), its `node_timeout`, or the run's end. */
export interface NodeStop {
  status: 'cancelled' | 'timed_out';
  reason: NodeReason;
}

export interface NodeOutcome {
  status: 'succeeded' | 'failed' | 'timed_out' | 'cancelled';
  exitCode?: number;
  signal?: string;
  reason?: NodeReason;
  /** Bytes of stdout and stderr passed on (at most max_output_bytes). */
  outputBytes: number;
  outputTruncated: boolean;
}

export interface NodeSessionOptions {
  /** The node and its jump hosts, each with its pinned keys. */
  hops: readonly Hop[];
  /** The node's place in the run: names its files in the run directory. */
  index: number;
  dir: RunDirectory;
  identity: Identity;
  /** The login name (the endpoint's `ssh.user`, else the node's); undefined leaves ssh's default. */
  user?: string;
  argv: readonly string[];
  /** The request context (JSON, one line) for the command's stdin, or undefined. */
  stdin?: string;
  connectTimeoutMs: number;
  /** SIGTERM, then SIGKILL this much later (`runs.cancel_grace`; read when the stop comes). */
  graceMs(): number;
  /** Aborted with a NodeStop when the node must stop (cancel, node_timeout). */
  stop: AbortSignal;
  maxOutputBytes: number;
  onOutput(stream: 'stdout' | 'stderr', bytes: Buffer): void;
  /** The command started on the node, in process group `group` there. */
  onStarted?(group: number): void;
  sshPath: string;
  log: Logger;
}

/** After SIGKILL was asked of the node, the gateway's ssh is given this long to end before it is killed here. */
const KILL_WAIT_MS = 5_000;

/**
 * Runs the command on one node with OpenSSH's `ssh` (argv, no local shell, its own process group here), through
 * the wrapper of remote-command.ts, and says how it ended. Nothing connects to a node (or through a jump host)
 * without a pinned key. The connection has `connect_timeout` per hop to start the command (else `unreachable`);
 * a stop sends `TERM` to the wrapper, `KILL` after the grace, and kills the local ssh if it is still there after
 * that (the wrapper then ends the command group itself).
 */
export async function runOnNode(options: NodeSessionOptions): Promise<NodeOutcome> {
  const { hops, dir, index, log } = options;
  const target = hops[0]!;
  const unpinned = hops.find((hop) => !hop.keys.some((key) => key.marker !== 'revoked'));
  if (unpinned) {
    log.warn('fleet node not run: no pinned host key', { node: target.name, ...(unpinned !== target ? { jump: unpinned.name } : {}) });
    return { status: 'failed', reason: 'host_key_unknown', outputBytes: 0, outputTruncated: false };
  }
  if (options.stop.aborted) return stoppedBeforeStart(options.stop.reason as NodeStop);
  const names = { config: `${index}.config`, knownHosts: `${index}.known_hosts`, logs: hops.map((hop) => `${index}.${hop.alias}.log`) };
  const files = {
    config: dir.file(names.config),
    knownHosts: dir.file(names.knownHosts),
    logOf: (alias: string) => dir.file(`${index}.${alias}.log`),
  };
  try {
    await dir.write(names.knownHosts, knownHostsText(hops));
    await dir.write(names.config, sshConfigText(hops, options.user, options.identity, files, options, options.sshPath));
    // A stop while the files were written fires no abort event later: the node ends without a connection.
    if (options.stop.aborted) return stoppedBeforeStart(options.stop.reason as NodeStop);
    const ended = await session(options, files.config, files.logOf(target.alias));
    const logs = await Promise.all(hops.map((hop) => readFile(files.logOf(hop.alias), 'utf8').catch(() => '')));
    return outcomeOf(ended, logs, hops, log);
  } finally {
    await dir.removeFiles([names.config, names.knownHosts, ...names.logs]);
  }
}

function stoppedBeforeStart(stop: NodeStop): NodeOutcome {
  return { status: stop.status, reason: stop.reason, outputBytes: 0, outputTruncated: false };
}

/** How the local ssh ended, with what the wrapper reported and what the gateway did to it. */
interface SessionEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
  spawnError?: string;
  reports: WrapperReports;
  stop?: NodeStop;
  /** The last signal asked of the command's group on the node. */
  groupSignal?: 'SIGTERM' | 'SIGKILL';
  connectTimedOut: boolean;
  outputBytes: number;
  outputTruncated: boolean;
}

function session(options: NodeSessionOptions, config: string, logFile: string): Promise<SessionEnd> {
  const token = randomBytes(8).toString('hex');
  const graceSeconds = Math.max(1, Math.ceil(options.graceMs() / 1000));
  const command = remoteCommand(options.argv, token, graceSeconds);
  return new Promise((resolve) => {
    const child = spawn(options.sshPath, ['-F', config, '-E', logFile, '-T', 'node', '--', command], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // its own process group here, with a jump host's ssh; no terminal to ask anything on
    });
    const filter = new ReportFilter(token);
    const end: SessionEnd = { code: null, signal: null, reports: filter.reports, connectTimedOut: false, outputBytes: 0, outputTruncated: false };
    const timers = new Set<NodeJS.Timeout>();
    const later = (ms: number, what: () => void) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        what();
      }, ms);
      timers.add(timer);
    };
    const killLocal = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Gone already.
      }
    };
    const tell = (line: string) => {
      if (!child.stdin.destroyed && child.stdin.writable) child.stdin.write(`${line}\n`);
    };
    const pass = (stream: 'stdout' | 'stderr', bytes: Buffer) => {
      if (bytes.length === 0) return;
      const room = options.maxOutputBytes - end.outputBytes;
      if (bytes.length > room) end.outputTruncated = true;
      const kept = room >= bytes.length ? bytes : bytes.subarray(0, Math.max(0, room));
      if (kept.length === 0) return;
      end.outputBytes += kept.length;
      options.onOutput(stream, kept);
    };

    child.stdin.on('error', () => undefined); // the connection went away: the outcome says how
    child.stdin.write(`${options.stdin ?? ''}\n`);
    child.stdout.on('data', (chunk: Buffer) => pass('stdout', chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      const before = filter.reports.startedGroup;
      pass('stderr', filter.push(chunk));
      if (before === undefined && filter.reports.startedGroup !== undefined) {
        clearTimeout(connectTimer);
        options.onStarted?.(filter.reports.startedGroup);
        if (end.stop) escalate(); // the stop came first: its TERM is already queued before the wrapper's reader
      }
    });

    // Each hop may take connect_timeout to connect and as long again for the key exchange and the login.
    const connectTimer = setTimeout(
      () => {
        if (filter.reports.startedGroup !== undefined) return;
        end.connectTimedOut = true;
        killLocal();
      },
      options.connectTimeoutMs * 2 * options.hops.length,
    );

    /** The group got TERM: KILL after the grace, and the local ssh killed if it is still there after that. */
    const escalate = () => {
      end.groupSignal = 'SIGTERM';
      later(options.graceMs(), () => {
        tell('KILL');
        end.groupSignal = 'SIGKILL';
        later(Math.max(KILL_WAIT_MS, options.connectTimeoutMs), killLocal);
      });
    };
    // TERM goes into the wrapper's stdin at once, also before the wrapper reported its group: stdin is read in
    // order, so its reader acts on the line the moment it starts, and a command that starts just after the stop
    // still ends. Killing the local ssh instead could leave it running: the wrapper's report, written into a
    // closed connection, ends the wrapper before its reader starts. A node that never reports (still connecting)
    // ends at its connect timeout.
    const onStop = () => {
      end.stop = options.stop.reason as NodeStop;
      tell('TERM');
      if (filter.reports.startedGroup !== undefined) escalate();
    };
    options.stop.addEventListener('abort', onStop, { once: true });

    child.once('error', (err: NodeJS.ErrnoException) => (end.spawnError = err.code ?? 'error'));
    child.once('close', (code, signal) => {
      clearTimeout(connectTimer);
      for (const timer of timers) clearTimeout(timer);
      options.stop.removeEventListener('abort', onStop);
      pass('stderr', filter.end());
      killLocal(); // a jump host's ssh left behind
      resolve({ ...end, code, signal });
    });
  });
}

const MISMATCH =
  /REMOTE HOST IDENTIFICATION HAS CHANGED|REVOKED HOST KEY|Host key verification failed|No \S+ host key is known for|host key for \S+ has changed/i;
const OFFERED = /The fingerprint for the (\S+) key sent by the remote host is\s+(SHA256:[A-Za-z0-9+/]+)/;
const AUTH = /Permission denied|Too many authentication failures|Authentication failed|no mutual signature|Certificate invalid|Received disconnect .*Auth/i;
const AUTHENTICATED = /^Authenticated to /m;
const LOST =
  /Timeout, server .* not responding|Broken pipe|Connection reset|closed by remote host|packet_write_wait|ssh_dispatch_run_fatal|Disconnected from|Connection timed out/i;

/**
 * A node's end, from the local ssh's exit, the wrapper's reports and ssh's own logs (one per hop, read after the
 * exit). The order matters: a stop asked by the gateway says the status; a reported exit is the command's; an
 * authenticated connection that ended without the exit report was lost; otherwise the connection never got
 * there, and the first hop whose log says why (host key, login) names the reason, else `unreachable`.
 */
export function outcomeOf(end: SessionEnd, logs: readonly string[], hops: readonly Hop[], log: Logger): NodeOutcome {
  const output = { outputBytes: end.outputBytes, outputTruncated: end.outputTruncated };
  const node = hops[0]!.name;
  const exit = end.reports.exitStatus;
  if (end.stop) {
    return {
      status: end.stop.status,
      reason: end.stop.reason,
      ...(exit !== undefined ? { exitCode: exit } : {}),
      ...(end.groupSignal ? { signal: end.groupSignal } : {}),
      ...output,
    };
  }
  if (exit !== undefined) return exit === 0 ? { status: 'succeeded', exitCode: 0, ...output } : { status: 'failed', exitCode: exit, ...output };
  if (end.spawnError) {
    log.error('fleet node not run: ssh could not be started', { node, code: end.spawnError });
    return { status: 'failed', reason: 'unreachable', ...output };
  }
  if (!end.connectTimedOut && AUTHENTICATED.test(logs[0] ?? '')) {
    if (end.reports.startedGroup !== undefined || end.code === 255 || end.code === null) {
      log.warn('fleet node connection lost', { node, detail: lastLine(logs[0]!, LOST) });
      return { status: 'failed', reason: 'connection_lost', ...output };
    }
    return { status: 'failed', exitCode: end.code, ...output }; // the login shell ended before the wrapper (no /bin/sh?)
  }
  // Outermost hop first: a jump host that refused us explains why the node could not be reached.
  for (let at = hops.length - 1; at >= 0; at--) {
    const text = logs[at] ?? '';
    const where = { node, ...(at > 0 ? { jump: hops[at]!.name } : {}) };
    if (MISMATCH.test(text)) {
      const offered = OFFERED.exec(text);
      log.warn('fleet node not run: its host key does not match the pinned keys', {
        ...where,
        ...(offered ? { offered_type: offered[1], offered_fingerprint: offered[2] } : {}),
        pinned: hops[at]!.keys.map((key) => key.fingerprint),
      });
      return { status: 'failed', reason: 'host_key_mismatch', ...output };
    }
    if (AUTH.test(text)) {
      log.warn('fleet node not run: the login was refused', { ...where, detail: lastLine(text, AUTH) });
      return { status: 'failed', reason: 'auth_failed', ...output };
    }
  }
  log.warn('fleet node unreachable', { node, detail: end.connectTimedOut ? 'no login within the connect window' : lastLine(logs.join('\n'), /./) });
  return { status: 'failed', reason: 'unreachable', ...output };
}

/** The last line of ssh's log that matches, for the log line (ssh's words: hosts and ports, never a key). */
function lastLine(text: string, pattern: RegExp): string | undefined {
  const lines = text.split(/\r?\n/).filter((line) => line !== '' && pattern.test(line) && !/^(Transferred|Bytes per second):/.test(line));
  return lines.at(-1)?.slice(0, 300);
}

/**
 * A spawn helper: a small process that starts commands for the gateway. fork() blocks the calling
 * process for a time that grows with its memory (docs/performance.md, "exec: who calls fork()"), so
 * the gateway, large and serving every request, never spawns itself: it sends each run here over the
 * link in frames (frames.ts) of V8's serialization: requests on fd 3, replies on fd 4 (helper-link.ts).
 *
 * Started with an empty environment, no argument naming the gateway, and re-parented away from it
 * (helper-link.ts), so that no process a command can walk up to through /proc/<ppid> holds the gateway's
 * environment. That alone hides nothing from a command that scans /proc for the gateway, which runs as the
 * same user: the gateway is made not dumpable for that (not-dumpable.ts). It says hello with its pid, which
 * the gateway logs.
 */
import { Socket } from 'node:net';
import { deserialize, serialize } from 'node:v8';
import { FrameReader } from './frames.js';
import { MAX_NODE_FRAME } from './node-link.js';
import { killGroup } from './process-groups.js';
import { runProcess, type ProcessSpec } from './run-process.js';

export type HelperRequest =
  | { type: 'run'; id: number; spec: Omit<ProcessSpec, 'signal' | 'onStart'> }
  | { type: 'abort'; id: number }
  /** A run's process group the gateway started itself (run: async): killed if the gateway goes away (docs/runs.md). */
  | { type: 'watch'; pgid: number }
  | { type: 'unwatch'; pgid: number };
export type HelperReply =
  { type: 'hello'; pid: number } | { type: 'started'; id: number; pid: number } | { type: 'done'; id: number; outcome: SerializedOutcome };
export type SerializedOutcome =
  Awaited<ReturnType<typeof runProcess>> extends infer O ? (O extends { cause?: Error } ? Omit<O, 'cause'> & { cause?: string } : O) : never;

const running = new Map<number, AbortController>();
const watched = new Set<number>();
const requests = new Socket({ fd: 3, readable: true, writable: false });
const replies = new Socket({ fd: 4, readable: false, writable: true });

/** After the gateway went away there is nobody to tell (the write fails, and ends `replies` alone: ignored). */
function reply(message: HelperReply): void {
  if (replies.destroyed || !replies.writable) return;
  const payload = serialize(message);
  const length = Buffer.allocUnsafe(4);
  length.writeUInt32LE(payload.length, 0);
  replies.cork(); // one writev for both
  replies.write(length);
  replies.write(payload);
  replies.uncork();
}

function receive(message: HelperRequest): void {
  if (message.type === 'abort') {
    running.get(message.id)?.abort();
    return;
  }
  if (message.type === 'watch') {
    watched.add(message.pgid);
    return;
  }
  if (message.type === 'unwatch') {
    watched.delete(message.pgid);
    return;
  }
  const controller = new AbortController();
  running.set(message.id, controller);
  const onStart = (pid: number) => reply({ type: 'started', id: message.id, pid });
  void runProcess({ ...message.spec, signal: controller.signal, onStart }).then((outcome) => {
    running.delete(message.id);
    const { cause, ...rest } = outcome as typeof outcome & { cause?: Error };
    reply({ type: 'done', id: message.id, outcome: (cause ? { ...rest, cause: cause.message } : rest) as SerializedOutcome });
  });
}

const reader = new FrameReader((frame) => receive(deserialize(frame.subarray(4)) as HelperRequest), 5, MAX_NODE_FRAME);
requests.on('data', (chunk: Buffer) => reader.push(chunk));
requests.on('error', () => undefined);
replies.on('error', () => undefined);

reply({ type: 'hello', pid: process.pid });

// The gateway went away (stop, crash): end every command still running and every watched group, then this helper.
// Their runs end once their trees are gone (daemons among them, run-process.ts), at most 5 s.
requests.once('close', () => {
  for (const pgid of watched) killGroup(pgid);
  for (const controller of running.values()) controller.abort();
  const until = Date.now() + 5000;
  const exitOnceDone = () => (running.size === 0 || Date.now() > until ? process.exit(0) : setTimeout(exitOnceDone, 20));
  exitOnceDone();
});

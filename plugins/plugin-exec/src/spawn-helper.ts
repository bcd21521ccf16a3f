/**
 * A spawn helper: a small process that starts commands for the gateway. fork() blocks the calling
 * process for a time that grows with its memory (docs/performance.md, "exec: who calls fork()"), so
 * the gateway, large and serving every request, never spawns itself: it sends each run here over IPC.
 *
 * Started with an empty environment, no argument naming the gateway, and re-parented away from it
 * (node-link.ts), so that no process a command can walk up to through /proc/<ppid> holds the gateway's
 * environment. That alone hides nothing from a command that scans /proc for the gateway, which runs as the
 * same user: the gateway is made not dumpable for that (not-dumpable.ts). It says hello with its pid, which
 * the gateway logs.
 */
import { runProcess, type ProcessSpec } from './run-process.js';

export type HelperRequest = { type: 'run'; id: number; spec: Omit<ProcessSpec, 'signal' | 'onStart'> } | { type: 'abort'; id: number };
export type HelperReply =
  { type: 'hello'; pid: number } | { type: 'started'; id: number; pid: number } | { type: 'done'; id: number; outcome: SerializedOutcome };
export type SerializedOutcome =
  Awaited<ReturnType<typeof runProcess>> extends infer O ? (O extends { cause?: Error } ? Omit<O, 'cause'> & { cause?: string } : O) : never;

const running = new Map<number, AbortController>();
/** After the gateway went away there is nobody to tell (a send would throw). */
const reply = (message: HelperReply) => process.connected && process.send?.(message);

process.on('message', (message: HelperRequest) => {
  if (message.type === 'abort') {
    running.get(message.id)?.abort();
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
});

reply({ type: 'hello', pid: process.pid });

// The gateway went away (stop, crash): end every command still running, then this helper.
// Their runs end once their trees are gone (daemons among them, run-process.ts), at most 5 s.
process.on('disconnect', () => {
  for (const controller of running.values()) controller.abort();
  const until = Date.now() + 5000;
  const exitOnceDone = () => (running.size === 0 || Date.now() > until ? process.exit(0) : setTimeout(exitOnceDone, 20));
  exitOnceDone();
});

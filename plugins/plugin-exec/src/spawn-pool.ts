import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from '@tkgate/core';
import type { ProcessOutcome, ProcessSpec } from './run-process.js';
import type { HelperReply, HelperRequest } from './spawn-helper.js';

interface Helper {
  process: ChildProcess;
  pending: Map<number, (outcome: ProcessOutcome) => void>;
}

const helperScript = new URL('./spawn-helper.js', import.meta.url);

/**
 * Spawn helpers (see spawn-helper.ts), each taking runs over IPC; a run goes to the helper with the
 * fewest in flight. They start with the first run (a gateway without exec endpoints, or `tkgate config
 * check`, never forks them). A helper that dies fails its runs as spawn_failed and is replaced.
 */
export class SpawnPool {
  private readonly helpers: Helper[] = [];
  private nextId = 1;
  private closing = false;

  constructor(
    private readonly size: number,
    private readonly log: Logger,
  ) {}

  run(spec: ProcessSpec): Promise<ProcessOutcome> {
    while (this.helpers.length < this.size) this.helpers.push(this.startHelper());
    const helper = this.helpers.reduce((best, candidate) => (candidate.pending.size < best.pending.size ? candidate : best));
    const id = this.nextId++;
    const { signal, ...rest } = spec;
    return new Promise((resolve) => {
      const onAbort = () => this.send(helper, { type: 'abort', id });
      helper.pending.set(id, (outcome) => {
        signal.removeEventListener('abort', onAbort);
        resolve(outcome);
      });
      signal.addEventListener('abort', onAbort, { once: true });
      this.send(helper, { type: 'run', id, spec: rest });
      if (signal.aborted) onAbort();
    });
  }

  close(): void {
    this.closing = true;
    for (const helper of this.helpers) helper.process.disconnect();
  }

  private send(helper: Helper, message: HelperRequest): void {
    if (helper.process.connected) helper.process.send(message);
  }

  private startHelper(): Helper {
    const child = fork(helperScript, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: ['--max-old-space-size=64'] });
    const helper: Helper = { process: child, pending: new Map() };
    child.on('message', (reply: HelperReply) => {
      const outcome = reply.outcome as ProcessOutcome & { cause?: unknown };
      if (typeof outcome.cause === 'string') outcome.cause = new Error(outcome.cause);
      helper.pending.get(reply.id)?.(outcome as ProcessOutcome);
      helper.pending.delete(reply.id);
    });
    child.on('exit', (code, signal) => {
      for (const finish of helper.pending.values()) finish({ ok: false, reason: 'spawn_failed', stderr: '', cause: new Error(`spawn helper exited (${code ?? signal})`) });
      helper.pending.clear();
      if (this.closing) return;
      this.log.error('exec spawn helper exited; starting another', { code, signal });
      this.helpers[this.helpers.indexOf(helper)] = this.startHelper();
    });
    return helper;
  }
}

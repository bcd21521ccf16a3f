import type { Logger } from '@tkgate/core';
import type { HelperLink, LaunchHelper } from './helper-link.js';
import { killGroupAndWait, killTree, processRunning } from './process-groups.js';
import type { ProcessOutcome, ProcessSpec } from './run-process.js';
import type { HelperReply, HelperRequest } from './spawn-helper.js';

interface Run {
  finish(outcome: ProcessOutcome): void;
  /** The command's pid, which is also its process group: known once the helper has started it. */
  pgid?: number;
  /** When the gateway stops waiting for the helper's answer (Date.now() ms): its timeout + STALL_MARGIN_MS. */
  deadline: number;
  /** The helper did not answer by the run's deadline: the run ends as a timeout, not a spawn failure. */
  overdue?: boolean;
}

/** A helper that dies sooner than this after its start is taken for one that cannot start. */
const STARTUP_MS = 1000;
/**
 * How long past a run's timeout the gateway waits for its helper's answer: the helper enforces the
 * timeout itself, so a helper silent this much longer is stalled (stopped, hung) and is replaced.
 */
export const STALL_MARGIN_MS = 5000;
/**
 * How often the deadlines are looked at: one timer for the pool, not one per run (a timer per run showed
 * in an exec request's instruction count: docs/performance.md, "exec: who calls fork()").
 */
const SWEEP_MS = 1000;

interface Helper {
  link?: HelperLink;
  /** Its pid, from its hello. */
  pid?: number;
  startedAt: number;
  runs: Map<number, Run>;
  gone: boolean;
}

/**
 * Process groups the gateway starts itself (a run's command, which streams its output to the gateway): while
 * one is watched, the spawn helpers, which outlive the gateway by a moment, kill it if the gateway dies.
 */
export interface GroupWatch {
  watch(pgid: number): void;
  unwatch(pgid: number): void;
}

/**
 * Spawn helpers (the native one, or spawn-helper.ts: spawner.ts chooses), each taking runs; a run
 * goes to the helper with the fewest in flight. They start with the first run (a gateway without exec
 * endpoints, or `tkgate config check`, never forks them). A helper that dies is replaced (at once, or with
 * the next run if it died as it started); its runs' process groups are killed, and each run fails as
 * spawn_failed only once its group is gone, so the admission places it held are freed only when nothing
 * of it still runs. The gateway keeps its own deadline on every run (its timeout + STALL_MARGIN_MS): a
 * helper that has not answered by then is stalled, and is killed with all it started and replaced. Runs'
 * process groups (GroupWatch) start the helpers too, and are told to each one, a replacement as well.
 */
export class SpawnPool implements GroupWatch {
  private readonly helpers: Helper[] = [];
  /** Process groups of runs (watch), sent to every helper, a new one too. */
  private readonly watched = new Set<number>();
  private nextId = 1;
  private closing = false;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly size: number,
    private readonly launch: LaunchHelper,
    private readonly log: Logger,
  ) {}

  run(spec: ProcessSpec): Promise<ProcessOutcome> {
    this.fill();
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
    const helper = this.helpers.reduce((best, candidate) => (candidate.runs.size < best.runs.size ? candidate : best));
    const id = this.nextId;
    // Ids are u32 in the native helper's frames; one that wraps after 4 billion runs is long finished.
    this.nextId = (this.nextId % 0xffff_ffff) + 1;
    const { signal, onStart: _onStart, ...rest } = spec;
    return new Promise((resolve) => {
      const onAbort = () => this.send(helper, { type: 'abort', id });
      helper.runs.set(id, {
        deadline: Date.now() + spec.timeoutMs + STALL_MARGIN_MS,
        finish: (outcome) => {
          signal.removeEventListener('abort', onAbort);
          resolve(outcome);
        },
      });
      signal.addEventListener('abort', onAbort, { once: true });
      this.send(helper, { type: 'run', id, spec: rest });
      if (signal.aborted) onAbort();
    });
  }

  /** The process group of a run the gateway started itself: every helper kills it if the gateway goes away. */
  watch(pgid: number): void {
    this.fill();
    this.watched.add(pgid);
    for (const helper of this.helpers) this.send(helper, { type: 'watch', pgid });
  }

  unwatch(pgid: number): void {
    if (!this.watched.delete(pgid)) return;
    for (const helper of this.helpers) this.send(helper, { type: 'unwatch', pgid });
  }

  close(): void {
    this.closing = true;
    clearInterval(this.sweeper);
    for (const helper of this.helpers) helper.link?.close();
  }

  /**
   * A helper killed a moment ago is told to the pool only when the end of its link is read, later in the
   * event loop; a run sent to it meanwhile would fail as spawn_failed without ever starting (two helpers
   * killed at once, and the first one's failed run admits a queued one). So each run first looks at the
   * helpers' processes (one /proc read each) and replaces the dead ones.
   */
  private replaceDeadHelpers(): void {
    for (const helper of [...this.helpers]) {
      if (!helper.gone && helper.pid !== undefined && !processRunning(helper.pid)) this.helperGone(helper);
    }
  }

  /** Dead helpers replaced, and the pool full (a helper that died as it started is replaced only here). */
  private fill(): void {
    this.replaceDeadHelpers();
    while (this.helpers.length < this.size) this.helpers.push(this.startHelper());
  }

  private send(helper: Helper, message: HelperRequest): void {
    helper.link?.send(message);
  }

  private startHelper(): Helper {
    const helper: Helper = { runs: new Map(), gone: false, startedAt: Date.now() };
    helper.link = this.launch({ reply: (reply) => this.receive(helper, reply), gone: () => this.helperGone(helper) });
    for (const pgid of this.watched) this.send(helper, { type: 'watch', pgid });
    return helper;
  }

  private receive(helper: Helper, reply: HelperReply): void {
    if (reply.type === 'hello') {
      helper.pid = reply.pid;
      this.log.info('exec spawn helper started', { pid: reply.pid });
      return;
    }
    const run = helper.runs.get(reply.id);
    if (!run) return;
    if (reply.type === 'started') {
      run.pgid = reply.pid;
      return;
    }
    helper.runs.delete(reply.id);
    const outcome = reply.outcome as ProcessOutcome & { cause?: unknown };
    if (typeof outcome.cause === 'string') outcome.cause = new Error(outcome.cause);
    run.finish(outcome as ProcessOutcome);
  }

  private helperGone(helper: Helper): void {
    if (helper.gone) return;
    helper.gone = true;
    const runs = [...helper.runs.values()];
    helper.runs.clear();
    if (!this.closing) {
      this.log.error('exec spawn helper exited; starting another', { runs_failed: runs.length });
      // One that dies as it starts (a broken binary) is replaced only with the next run (run() fills the
      // pool), so it costs one attempt per request, never a loop of forks; any other at once.
      const index = this.helpers.indexOf(helper);
      if (Date.now() - helper.startedAt < STARTUP_MS) this.helpers.splice(index, 1);
      else this.helpers[index] = this.startHelper();
    }
    for (const run of runs) void this.failRun(run);
  }

  /** Each helper holding a run past its deadline is stalled. */
  private sweep(): void {
    const now = Date.now();
    for (const helper of [...this.helpers]) {
      for (const run of helper.runs.values()) {
        if (run.deadline > now) continue;
        this.overdue(helper, run);
        break;
      }
    }
  }

  /** The run's helper has not answered in its timeout + STALL_MARGIN_MS: it is ended with all it started. */
  private overdue(helper: Helper, run: Run): void {
    if (helper.gone) return;
    run.overdue = true;
    this.log.error('exec spawn helper did not answer in time; replacing it', { pid: helper.pid, margin_ms: STALL_MARGIN_MS });
    const { pid } = helper;
    this.helperGone(helper);
    helper.link?.close();
    if (pid !== undefined) void killTree(pid);
  }

  /** A run whose helper died: its commands no longer have anyone to stop them, so they are killed here. */
  private async failRun(run: Run): Promise<void> {
    if (run.pgid !== undefined && !(await killGroupAndWait(run.pgid))) {
      this.log.warn('exec process group still running 5 s after SIGKILL', { pgid: run.pgid });
    }
    if (run.overdue) run.finish({ ok: false, reason: 'timeout', stderr: '', cause: new Error('the spawn helper did not answer in time') });
    else run.finish({ ok: false, reason: 'spawn_failed', stderr: '', cause: new Error('the spawn helper running the command died') });
  }
}

import type { Knex } from 'knex';
import type { InternalRunOptions } from '../auth/internal-calls.js';
import type { RunReason, RunStatus } from './run-record.js';
import type { AlsoWrite, Approver, ClaimedRun, DecisionOutcome, NewRun, RunEnd, RunStore } from './run-store.js';
import { FULL, HELD } from './run-store.js';

/** The run a state change is about. */
export interface TransitionRun {
  id: string;
  toolkit: string;
  endpoint: string;
  userId: number | null;
}

/** One change of a run's state: `from` null for a new run. */
export interface RunTransition {
  run: TransitionRun;
  /** A new run asked for through an internal call (a schedule's fire, a fleet's rerun): what it carries beyond the call. */
  internal?: InternalRunOptions;
  from: readonly RunStatus[] | null;
  to: RunStatus;
  reason: RunReason | null;
  at: number;
  /** An ended run's exit code and how long it ran (null when it never started). */
  exitCode?: number | null;
  durationMs?: number | null;
}

/**
 * Writes rows of its own in the transaction of a state change (a notification's outbox row): they commit with the
 * change, or not at all. It runs inside a database transaction: no waiting on anything but the database.
 */
export type TransitionWriter = (trx: Knex.Transaction, transition: RunTransition) => Promise<void>;
/** Hears a state change after it committed (metrics, the audit trail, followers); a promise is waited for. */
export type TransitionListener = (transition: RunTransition) => void | Promise<void>;

/**
 * The one place a run's state changes are written (docs/architecture.md, "Runs"): a new run (queued or
 * awaiting_approval), a claim (running), an approval's quorum (queued), and every end (succeeded, failed,
 * timed_out, cancelled, lost, rejected, expired). Each is one conditional statement or a short transaction of
 * the store; `writeWith` adds writes to that transaction, `onChange` hears the change once it is committed.
 * Nobody registered: no transaction is opened for an end, and nothing is called.
 */
export class RunTransitions {
  private readonly writers: TransitionWriter[] = [];
  private readonly listeners: TransitionListener[] = [];

  constructor(private readonly store: RunStore) {}

  /** Writes with every state change, in its transaction; returns the undo. */
  writeWith(writer: TransitionWriter): () => void {
    this.writers.push(writer);
    return () => void this.writers.splice(this.writers.indexOf(writer) >>> 0, 1);
  }

  /** Hears every committed state change; returns the undo. */
  onChange(listener: TransitionListener): () => void {
    this.listeners.push(listener);
    return () => void this.listeners.splice(this.listeners.indexOf(listener) >>> 0, 1);
  }

  private alsoFor(transitions: () => RunTransition[]): ((trx: Knex.Transaction) => Promise<void>) | undefined {
    if (this.writers.length === 0) return undefined;
    return async (trx) => {
      for (const transition of transitions()) for (const writer of this.writers) await writer(trx, transition);
    };
  }

  private async told(transitions: readonly RunTransition[]): Promise<void> {
    if (this.listeners.length === 0) return;
    await Promise.all(transitions.flatMap((transition) => this.listeners.map((listener) => listener(transition))));
  }

  /** One change through `write` (handed the writes of its transaction), then the caller's own step, then the listeners. */
  private async change(
    transition: RunTransition,
    write: (also: AlsoWrite | undefined) => Promise<boolean>,
    first?: () => void | Promise<void>,
  ): Promise<boolean> {
    if (!(await write(this.alsoFor(() => [transition])))) return false;
    await first?.();
    await this.told([transition]);
    return true;
  }

  /** A new run in its queue (awaiting_approval with an approval, else queued); false when the queue is full. */
  async submit(queue: string, run: NewRun, maxQueued: number, internal?: InternalRunOptions): Promise<boolean> {
    const transition: RunTransition = {
      ...(internal && { internal }),
      run: { id: run.id, toolkit: run.toolkit, endpoint: run.endpoint, userId: run.userId },
      from: null,
      to: run.approval ? 'awaiting_approval' : 'queued',
      reason: null,
      at: run.queuedAt,
    };
    return this.change(transition, (also) => this.store.submit(queue, run, maxQueued, also));
  }

  /** Claims a queue's startable runs for this instance (run-queue.ts): each one that starts is queued → running. */
  async claim(claim: {
    queue: string;
    maxConcurrency: number;
    instance: string;
    now: number;
    definitionHash?: string;
    room?: number;
  }): Promise<ClaimedRun[] | typeof FULL | typeof HELD> {
    const { queue, maxConcurrency, instance, now, definitionHash, room } = claim;
    const started = (runs: readonly ClaimedRun[]): RunTransition[] =>
      runs.map((run) => ({
        run: { id: run.id, toolkit: run.toolkit, endpoint: run.endpoint, userId: run.user_id },
        from: ['queued'],
        to: 'running',
        reason: null,
        at: now,
      }));
    const also: ((trx: Knex.Transaction, runs: readonly ClaimedRun[]) => Promise<void>) | undefined =
      this.writers.length === 0 ? undefined : (trx, runs) => this.alsoFor(() => started(runs))!(trx);
    const claimed = await this.store.claim(queue, maxConcurrency, instance, now, definitionHash, room, also);
    if (claimed !== FULL && claimed !== HELD && claimed.length > 0) await this.told(started(claimed));
    return claimed;
  }

  /** An approver's decision: the quorum's last approval queues the run, a reject ends it rejected. */
  async decide(
    run: TransitionRun,
    approver: Approver,
    decision: 'approve' | 'reject',
    comment: string | null,
    now: number,
    first?: (outcome: DecisionOutcome) => void | Promise<void>,
  ): Promise<DecisionOutcome> {
    const transitionOf = (outcome: 'queued' | 'rejected'): RunTransition => ({
      run,
      from: ['awaiting_approval'],
      to: outcome,
      reason: null,
      at: now,
      ...(outcome === 'rejected' && { exitCode: null, durationMs: null }),
    });
    const also =
      this.writers.length === 0 ? undefined : (trx: Knex.Transaction, outcome: 'queued' | 'rejected') => this.alsoFor(() => [transitionOf(outcome)])!(trx);
    const outcome = await this.store.decide(run.id, approver, decision, comment, now, also);
    await first?.(outcome);
    if (outcome === 'queued' || outcome === 'rejected') await this.told([transitionOf(outcome)]);
    return outcome;
  }

  /**
   * Ends a run that is in one of `from` (with `instance`, only one running there); false when it had moved.
   * `startedAt` gives the end its duration; `first` is the caller's own step once it is committed, before the listeners.
   */
  async end(
    run: TransitionRun,
    from: readonly RunStatus[],
    end: RunEnd,
    options: { instance?: string; startedAt?: number | null; first?: () => void | Promise<void> } = {},
  ): Promise<boolean> {
    const transition: RunTransition = {
      run,
      from,
      to: end.status,
      reason: end.reason ?? null,
      at: end.endedAt,
      exitCode: end.exitCode ?? null,
      durationMs: options.startedAt === undefined || options.startedAt === null ? null : end.endedAt - options.startedAt,
    };
    return this.change(transition, (also) => this.store.end(run.id, from, end, options.instance, also), options.first);
  }

  /** Ends a waiting run cancelled, at once. */
  async cancelWaiting(run: TransitionRun, by: string, now: number): Promise<boolean> {
    const transition: RunTransition = {
      run,
      from: ['queued', 'awaiting_approval'],
      to: 'cancelled',
      reason: 'cancelled_by',
      at: now,
      exitCode: null,
      durationMs: null,
    };
    return this.change(transition, (also) => this.store.cancelWaiting(run.id, by, now, also));
  }

  /** Ends a running run whose instance went silent (heartbeat older than `before`) lost. */
  async endLost(run: TransitionRun, startedAt: number | null, before: number, now: number): Promise<boolean> {
    const transition: RunTransition = {
      run,
      from: ['running'],
      to: 'lost',
      reason: 'instance_lost',
      at: now,
      exitCode: null,
      durationMs: startedAt === null ? null : now - startedAt,
    };
    return this.change(transition, (also) => this.store.endLost(run.id, before, now, also));
  }
}

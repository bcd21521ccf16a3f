import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { purgeIntervalMs } from '../audit/audit-retention.js';
import type { AuditActor, AuditEvent } from '../audit/audit-event.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import { describeDatabaseError } from '../db/database-errors.js';
import { GatewayError } from '../errors.js';
import { scopedLogger, type Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { DetachedOutcome, DetachedPlan } from '../plugins/plugin-api.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { ToolkitSnapshot } from '../toolkits/toolkit-resolution.js';
import { BatchedChunkWriter, RunOutput } from './run-output.js';
import { RunFeeds, type RunEnding } from './run-feeds.js';
import type { RunReason, RunRow, RunStatus } from './run-record.js';
import {
  FULL,
  keyOf,
  queueOf,
  RunStore,
  type Approver,
  type ClaimedRun,
  type DecisionOutcome,
  type DryRunRecord,
  type NewRun,
  type WaitingQueue,
} from './run-store.js';

/** How often an instance looks for queued runs and for cancellations of its own (a freed place is taken within 1 s). */
export const TICK_MS = 400;
/** How long a stopped run has to end after SIGKILL before the stop goes on without it. */
const KILLED_WAIT_MS = 5_000;

/** How often an instance looks for runs whose approval ran out. */
const EXPIRY_CHECK_MS = 1_000;
/** The most a dry run's output shown to approvers holds. */
export const DRY_RUN_OUTPUT_BYTES = 65_536;

/**
 * Run ids: 128 random bits in hex (32 characters). Not base64url: an id starting with `-` read as an option by
 * `tkgate runs show|cancel|approve ID` (one run in 32), and ids are typed and pasted by people.
 */
export const newRunId = (): string => randomBytes(16).toString('hex');

/** A run going on here. */
interface LocalRun {
  id: string;
  toolkit: string;
  endpoint: string;
  /** Its queue: the place it frees at its end is looked at alone (wakeFor). */
  queue: WaitingQueue;
  userId: number | null;
  startedAt: number;
  output: RunOutput;
  controller: AbortController;
  grace: number;
  /** Why core stopped it: a cancel (by whom) or the gateway stopping. */
  stopped?: { by: 'cancel'; who: string } | { by: 'gateway' };
  done: Promise<void>;
}

/** What a call asks for: the endpoint, the caller, the request context and the payload fields kept. */
export interface RunRequest {
  endpoint: CompiledEndpoint;
  plan: DetachedPlan;
  method: string;
  caller: { id: number; username: string };
  actor: string;
  requestId: string;
  context: Record<string, unknown>;
  payload: Record<string, unknown>;
  /** A template endpoint's path parameters (what `$path.<name>` names). */
  pathParams: Record<string, unknown> | undefined;
  keptPayload: Record<string, unknown> | undefined;
}

export interface RunsServices {
  config: ServerConfig;
  db: Database;
  registry: ToolkitRegistry;
  log: Logger;
  audit: AuditTrail;
  metrics: GatewayMetrics;
}

const busy = () => new GatewayError(503, 'busy', 'too many runs of this endpoint are waiting; try again shortly', { headers: { 'Retry-After': '5' } });

/** The value of `$payload.x` or `$context.x` in a call. */
function keyValue(spec: string, request: RunRequest): unknown {
  const [source, field] = spec.slice(1).split('.', 2) as [string, string];
  const values = source === 'payload' ? request.payload : source === 'path' ? (request.pathParams ?? {}) : request.context;
  return values[field] ?? null;
}

/**
 * Runs on this instance (docs/runs.md): records a call's run, and on every tick claims queued runs this instance
 * may start (store.claim: one instance per run, the queue's limits held across instances), looks for
 * cancellations of its runs, records their heartbeats, ends runs whose instance went silent, and purges old ones.
 * A run runs through its endpoint type's `runDetached`, with its output chunked, stored and streamed (run-output.ts,
 * run-feeds.ts). The request that asked for a run is long gone by then: nothing of it is needed.
 */
export class Runs {
  readonly store: RunStore;
  readonly feeds: RunFeeds;
  /** This instance, as runs record it: host, pid and a random part (a restart is another instance). */
  readonly instance = `${hostname().slice(0, 30)}:${process.pid}:${randomBytes(6).toString('hex')}`;
  private readonly local = new Map<string, LocalRun>();
  private readonly plans = new WeakMap<CompiledEndpoint, DetachedPlan | null>();
  private readonly hashes = new WeakMap<CompiledEndpoint, string>();
  /** Dry runs going on here: stopped with the gateway. */
  private readonly dryRuns = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  /** The snapshot whose definitions the waiting runs were last checked against. */
  private boundChecked: ToolkitSnapshot | undefined;
  private lastExpiry = 0;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private again = false;
  /**
   * The queues whose every place was taken at this instance's last claim of them (max_concurrency running, or no room
   * here). A run asked for in one of them cannot start before a place frees, so it wakes nobody: a place freed here
   * wakes this instance, one freed elsewhere wakes that instance, and the next tick (TICK_MS) looks anyway.
   */
  private readonly fullQueues = new Set<string>();
  /**
   * The queues to claim in the next look when no look at every queue is due: a run was asked for in one, or a run of
   * this instance ended in one. Reading every queue with waiting runs takes a time that grows with the runs waiting;
   * under a steady stream of async calls it was made once per call and per run's end, and took most of the instance's
   * CPU (docs/performance.md, "Async calls to a busy endpoint").
   */
  private readonly dueQueues = new Map<string, WaitingQueue>();
  /** Whether the next look reads every queue with waiting runs: the timer's tick, an approval's quorum, the start. */
  private everyQueueDue = true;
  /** Whether the last look at every queue found this instance without room: then a place freed here may serve any queue. */
  private roomLimited = false;
  private draining = false;
  private lastHeartbeat = 0;
  private lastPurgeCheck = 0;
  /** Whether the live snapshot has an endpoint that runs as a job, asked once per snapshot. */
  private jobsOf: { snapshot: ToolkitSnapshot; serves: boolean; approvals: boolean } | undefined;
  private readonly log: Logger;

  constructor(private readonly s: RunsServices) {
    this.store = new RunStore(s.db);
    this.log = scopedLogger(s.log, { component: 'runs' });
    this.feeds = new RunFeeds(this.store, this.log);
    s.metrics.runs(
      () => this.local.size,
      () => this.store.countQueued(),
      () => this.store.countAwaiting(),
    );
  }

  /** Whether (and how) an endpoint runs as a job: its type's answer, asked once per endpoint version. */
  planOf(endpoint: CompiledEndpoint): DetachedPlan | undefined {
    let plan = this.plans.get(endpoint);
    if (plan === undefined) {
      plan = (endpoint.type.runDetached && endpoint.type.detached?.(endpoint.typeConfig)) || null;
      this.plans.set(endpoint, plan);
    }
    return plan ?? undefined;
  }

  /** The SHA-256 of an endpoint's definition (its configuration as written): what an approval binds. */
  definitionHash(endpoint: CompiledEndpoint): string {
    let hash = this.hashes.get(endpoint);
    if (hash === undefined) {
      hash = createHash('sha256').update(endpoint.definition).digest('hex');
      this.hashes.set(endpoint, hash);
    }
    return hash;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), TICK_MS);
    this.timer.unref();
    this.wake();
  }

  /** Records a call's run; 503 busy when its queue is full. Resolves to the run's id. */
  async submit(request: RunRequest): Promise<string> {
    const { endpoint, plan } = request;
    const id = newRunId();
    const admin = this.s.config.auth.admin_power;
    const run: NewRun = {
      id,
      toolkit: endpoint.toolkit,
      endpoint: endpoint.path,
      method: request.method,
      concurrencyKey: plan.concurrencyKey ? keyOf(keyValue(plan.concurrencyKey, request)) : null,
      userId: request.caller.id,
      username: request.caller.username,
      actor: request.actor,
      requestId: request.requestId,
      viewPower: plan.viewPower ?? admin,
      cancelPower: plan.cancelPower ?? admin,
      payload: request.keptPayload,
      context: request.context,
      queuedAt: Date.now(),
    };
    const approval = endpoint.approval;
    if (approval)
      run.approval = {
        definitionHash: this.definitionHash(endpoint),
        expiresAt: run.queuedAt + approval.expiresMs,
        minPower: approval.minPower,
        group: approval.group,
        quorum: approval.quorum,
        allowSelf: approval.allowSelf,
        dryRun: approval.dryRun !== undefined && endpoint.type.dryRun !== undefined,
      };
    const queue: WaitingQueue = { queue: queueOf(run.toolkit, run.endpoint, run.method), toolkit: run.toolkit, endpoint: run.endpoint, method: run.method };
    if (!(await this.store.submit(queue.queue, run, plan.maxQueued))) throw busy();
    if (approval) {
      void this.s.audit.record({
        requestId: request.requestId,
        actorUserId: request.caller.id,
        actor: request.actor as AuditActor,
        action: 'run_request',
        toolkit: endpoint.toolkit,
        endpoint: endpoint.path,
        method: request.method,
        status: 202,
        code: 'ok',
        details: { run_id: id, quorum: approval.quorum, expires_at: new Date(run.approval!.expiresAt).toISOString() },
      });
      if (run.approval!.dryRun) this.dryRun(id, endpoint, request.context);
    } else this.wakeFor(queue);
    return id;
  }

  /** Runs the endpoint's dry run now, with the run's context; its masked output is recorded for the approvers. */
  private dryRun(id: string, endpoint: CompiledEndpoint, context: Record<string, unknown>): void {
    const log = scopedLogger(this.s.log, { plugin: endpoint.type.plugin, run_id: id, toolkit: endpoint.toolkit, endpoint: endpoint.path, dry_run: true });
    const done = (async () => {
      let record: DryRunRecord;
      try {
        const outcome = await endpoint.type.dryRun!({
          config: endpoint.typeConfig,
          command: endpoint.approval!.dryRun!,
          context,
          runId: id,
          endpoint: { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint },
          log,
          maxOutputBytes: DRY_RUN_OUTPUT_BYTES,
          signal: this.stopping.signal,
        });
        const output = Buffer.from(outcome.output, 'utf8');
        record = {
          status: outcome.status,
          exit_code: outcome.exitCode ?? null,
          output: output.length > DRY_RUN_OUTPUT_BYTES ? output.subarray(0, DRY_RUN_OUTPUT_BYTES).toString('utf8') : outcome.output,
        };
      } catch (err) {
        log.error('dry run failed', { error: (err as Error).message });
        record = { status: 'failed', exit_code: null, output: '' };
      }
      await this.store.recordDryRun(id, record).catch((err: unknown) => log.warn('dry run not recorded', describeDatabaseError(err)));
    })();
    this.dryRuns.add(done);
    void done.finally(() => this.dryRuns.delete(done));
  }

  /**
   * Records an approver's decision (store.decide); the run's end (rejected) or its queueing is told here, and the
   * decision is recorded in the audit trail (`run_approve`, `run_reject`).
   */
  async decide(
    run: RunRow,
    approver: Approver,
    decision: 'approve' | 'reject',
    comment: string | null,
    audit: Omit<AuditEvent, 'action' | 'toolkit' | 'endpoint' | 'status' | 'code' | 'details'>,
  ): Promise<DecisionOutcome> {
    const outcome = await this.store.decide(run.id, approver, decision, comment, Date.now());
    if (outcome === 'not_pending' || outcome === 'already_decided') return outcome;
    void this.s.audit.record({
      ...audit,
      action: decision === 'approve' ? 'run_approve' : 'run_reject',
      toolkit: run.toolkit,
      endpoint: run.endpoint,
      status: 200,
      code: 'ok',
      details: { run_id: run.id, ...(comment !== null ? { comment } : {}), ...(outcome === 'queued' ? { queued: true } : {}) },
    });
    if (outcome === 'queued') this.wake();
    if (outcome === 'rejected') {
      this.feeds.ended(run.id, { status: 'rejected', exit_code: null });
      this.ended(run.id, run.toolkit, run.endpoint, 'rejected', null, null, null, run.user_id);
    }
    return outcome;
  }

  /** Ends a waiting run expired: its approval ran out, or its endpoint's definition changed (`run_expire`, then `run_end`). */
  private async expire(run: Pick<RunRow, 'id' | 'toolkit' | 'endpoint' | 'user_id'>, reason: 'approval_expired' | 'definition_changed'): Promise<void> {
    const end = { status: 'expired' as const, reason, outputBytes: 0, outputTruncated: false, endedAt: Date.now() };
    // Past its deadline only while it awaits approval (an approval that came first wins); a changed definition also
    // stops an approved run that has not started.
    const from: RunStatus[] = reason === 'approval_expired' ? ['awaiting_approval'] : ['awaiting_approval', 'queued'];
    if (!(await this.store.end(run.id, from, end))) return;
    void this.s.audit.record({
      actor: 'system',
      actorUserId: run.user_id,
      action: 'run_expire',
      toolkit: run.toolkit,
      endpoint: run.endpoint,
      status: null,
      code: reason,
      details: { run_id: run.id, reason },
    });
    this.feeds.ended(run.id, { status: 'expired', exit_code: null });
    this.ended(run.id, run.toolkit, run.endpoint, 'expired', null, null, reason, run.user_id);
  }

  /**
   * Whether a run awaiting approval may still be decided: not past its `expires`, and its endpoint's definition
   * the one it was asked for on this instance; otherwise it ends expired here and now.
   */
  async stillPending(run: RunRow): Promise<boolean> {
    if (run.status !== 'awaiting_approval') return true;
    if (run.expires_at !== null && run.expires_at <= Date.now()) {
      await this.expire(run, 'approval_expired');
      return false;
    }
    const endpoint = this.s.registry.snapshot.get(run.toolkit)?.routes.get(run.endpoint)?.get(run.method);
    if (run.definition_hash !== null && (!endpoint || this.definitionHash(endpoint) !== run.definition_hash)) {
      await this.expire(run, 'definition_changed');
      return false;
    }
    return true;
  }

  /** Runs awaiting approval past their `expires`, ended expired (approval_expired) by whichever instance sees them first. */
  private async expireOverdue(now: number): Promise<void> {
    for (const run of await this.store.overdue(now)) await this.expire(run, 'approval_expired');
  }

  /**
   * After a reload (or at start), the waiting runs bound to a definition are checked against this instance's
   * endpoints: one whose endpoint changed or is gone never starts (expired, definition_changed).
   */
  private async checkBound(snapshot: ToolkitSnapshot): Promise<void> {
    for (const run of await this.store.bound()) {
      const endpoint = snapshot.get(run.toolkit)?.routes.get(run.endpoint)?.get(run.method);
      if (!endpoint || this.definitionHash(endpoint) !== run.definition_hash) await this.expire(run, 'definition_changed');
    }
    this.boundChecked = snapshot;
  }

  /** Looks at every queue now, else right after the look under way. */
  wake(): void {
    this.everyQueueDue = true;
    this.look();
  }

  /**
   * Looks at one queue now (a run was asked for in it, or a place was freed in it here): nothing when its every place
   * was taken at the last look (the run waits for a place, whose freeing wakes whoever frees it), every queue when this
   * instance had no room (the place freed here may serve any of them).
   */
  private wakeFor(queue: WaitingQueue): void {
    if (this.roomLimited) return this.wake();
    if (this.fullQueues.has(queue.queue)) return;
    this.dueQueues.set(queue.queue, queue);
    this.look();
  }

  private look(): void {
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick().finally(() => {
      this.ticking = false;
      if (this.again) {
        this.again = false;
        setImmediate(() => this.look());
      }
    });
  }

  /** Whether any live endpoint runs as a job: an instance with none (and no run of its own) asks the database nothing each tick. */
  private servesJobs(): boolean {
    const snapshot = this.s.registry.snapshot;
    if (this.jobsOf?.snapshot !== snapshot) {
      let [serves, approvals] = [false, false];
      for (const toolkit of snapshot.values())
        for (const methods of toolkit.routes.values())
          for (const endpoint of methods.values()) {
            serves ||= this.planOf(endpoint) !== undefined;
            approvals ||= endpoint.approval !== undefined;
          }
      this.jobsOf = { snapshot, serves, approvals };
    }
    return this.jobsOf.serves;
  }

  /** Whether any live endpoint needs approval: only then are deadlines looked for each second. */
  private servesApprovals(): boolean {
    return this.servesJobs() && this.jobsOf!.approvals;
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    const steps: Array<[string, () => Promise<unknown>]> = [];
    // A gateway whose toolkits run no job pays nothing here (no query every tick): runs nobody configured cost nothing.
    const active = this.local.size > 0 || this.servesJobs();
    const snapshot = this.s.registry.snapshot;
    if (active && this.boundChecked !== snapshot) steps.push(['definitions', () => this.checkBound(snapshot)]);
    if (active && now - this.lastExpiry >= EXPIRY_CHECK_MS && this.servesApprovals()) {
      this.lastExpiry = now;
      steps.push(['expiry', () => this.expireOverdue(now)]);
    }
    if (active && !this.draining) steps.push(['claim', () => this.claimQueued()]);
    if (this.local.size > 0) steps.push(['cancel', () => this.seeCancellations()]);
    if (active && now - this.lastHeartbeat >= this.s.config.runs.heartbeat_ms) {
      this.lastHeartbeat = now;
      steps.push(['heartbeat', () => this.heartbeat(now)], ['lost', () => this.endSilent(now)]);
    }
    // As often as a purge may be due (a tenth of runs.retention, at most hourly): the check is one read of one row.
    if (now - this.lastPurgeCheck >= purgeIntervalMs(this.s.config.runs.retention_ms)) {
      this.lastPurgeCheck = now;
      steps.push(['purge', () => this.purge(now)]);
    }
    for (const [step, work] of steps) {
      try {
        await work();
      } catch (err) {
        this.log.warn('runs housekeeping failed', { step, ...describeDatabaseError(err) });
      }
    }
  }

  /** The queues with waiting runs, the longest-waiting first; each claimed under its lock. */
  private async claimQueued(): Promise<void> {
    const everyQueue = this.everyQueueDue;
    const due = [...this.dueQueues.values()];
    this.everyQueueDue = false;
    this.dueQueues.clear();
    const queues = everyQueue ? await this.store.waitingQueues() : due;
    if (everyQueue) {
      // Found again below, queue by queue: a queue that emptied meanwhile is full no more.
      this.fullQueues.clear();
      this.roomLimited = false;
    }
    for (const queue of queues) {
      if (this.draining) return;
      const endpoint = this.endpointOf(queue);
      const plan = endpoint && this.planOf(endpoint);
      if (!endpoint || !plan) {
        await this.endUnknown(queue);
        continue;
      }
      // The type's own bound here (exec: max_processes): a full instance leaves the queue to the others.
      const room = plan.room?.() ?? Infinity;
      if (room <= 0) {
        this.fullQueues.add(queue.queue);
        this.roomLimited = true;
        continue;
      }
      const hash = endpoint.approval ? this.definitionHash(endpoint) : undefined;
      const claimed = await this.store.claim(queue.queue, plan.maxConcurrency, this.instance, Date.now(), hash, room);
      if (claimed === FULL) this.fullQueues.add(queue.queue);
      else {
        this.fullQueues.delete(queue.queue);
        for (const run of claimed) this.run(run, endpoint, plan);
      }
    }
  }

  private endpointOf(run: WaitingQueue): CompiledEndpoint | undefined {
    return this.s.registry.snapshot.get(run.toolkit)?.routes.get(run.endpoint)?.get(run.method);
  }

  /** The queued runs of an endpoint that is gone, or runs as a job no more: they can never start. */
  private async endUnknown(queue: WaitingQueue): Promise<void> {
    const end = { status: 'failed' as const, reason: 'definition_changed' as const, outputBytes: 0, outputTruncated: false, endedAt: Date.now() };
    for (const id of await this.store.waitingIn(queue.queue)) {
      if (await this.store.end(id, ['queued'], end)) this.ended(id, queue.toolkit, queue.endpoint, end.status, null, null, end.reason);
    }
  }

  /** Runs a claimed run here, to its end. */
  private run(claimed: ClaimedRun, endpoint: CompiledEndpoint, plan: DetachedPlan): void {
    const feed = this.feeds.startLocal(claimed.id);
    const writer = new BatchedChunkWriter(
      (chunks) => this.store.appendChunks(claimed.id, chunks),
      (chunks) => feed.stored(chunks),
      this.log,
    );
    const output = new RunOutput(plan.maxOutputBytes, writer);
    const controller = new AbortController();
    const local: LocalRun = {
      id: claimed.id,
      toolkit: claimed.toolkit,
      endpoint: claimed.endpoint,
      queue: { queue: claimed.queue, toolkit: claimed.toolkit, endpoint: claimed.endpoint, method: claimed.method },
      userId: claimed.user_id,
      startedAt: Date.now(),
      output,
      controller,
      grace: this.s.config.runs.cancel_grace_ms,
      done: Promise.resolve(),
    };
    this.local.set(claimed.id, local);
    const log = scopedLogger(this.s.log, { plugin: endpoint.type.plugin, run_id: claimed.id, toolkit: claimed.toolkit, endpoint: claimed.endpoint });
    local.done = (async () => {
      let outcome: DetachedOutcome;
      try {
        outcome = await endpoint.type.runDetached!({
          config: endpoint.typeConfig,
          context: claimed.context,
          runId: claimed.id,
          requestId: claimed.request_id ?? '',
          endpoint: { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint },
          log,
          output,
          signal: controller.signal,
          graceMs: () => local.grace,
        });
      } catch (err) {
        log.error('run failed', { error: (err as Error).message });
        outcome = { status: 'failed' };
      }
      output.close();
      await writer.settled();
      await this.finish(local, outcome, (ending) => feed.ended(ending));
    })();
  }

  private async finish(local: LocalRun, outcome: DetachedOutcome, told: (ending: RunEnding) => void): Promise<void> {
    let status: RunStatus = outcome.status;
    let reason: RunReason | null = outcome.status === 'timed_out' ? 'timeout' : null;
    if (local.stopped?.by === 'cancel') [status, reason] = ['cancelled', 'cancelled_by'];
    else if (local.stopped?.by === 'gateway') [status, reason] = ['failed', 'gateway_stopped'];
    const result = status === 'succeeded' && outcome.result !== undefined ? JSON.stringify(outcome.result) : null;
    const end = {
      status,
      reason,
      exitCode: outcome.exitCode ?? null,
      signal: outcome.signal ?? null,
      result,
      outputBytes: local.output.bytes,
      outputTruncated: local.output.truncated,
      endedAt: Date.now(),
    };
    let recorded = false;
    try {
      recorded = await this.store.end(local.id, ['running'], end, this.instance);
    } catch (err) {
      this.log.error('run end not recorded', { run_id: local.id, ...describeDatabaseError(err) });
    }
    this.local.delete(local.id);
    if (recorded) {
      told({ status, exit_code: end.exitCode });
      this.ended(local.id, local.toolkit, local.endpoint, status, end.exitCode, end.endedAt - local.startedAt, reason, local.userId);
    } else {
      // Ended elsewhere meanwhile (lost after a long pause of this instance): followers read what the database says.
      const row = await this.store.get(local.id).catch(() => undefined);
      told({ status: row?.status ?? 'lost', exit_code: row?.exit_code ?? null });
    }
    // The place freed here: its queue is full no more.
    this.fullQueues.delete(local.queue.queue);
    this.wakeFor(local.queue);
  }

  /** A run ended: counted, and recorded in the audit trail (`run_end`). */
  ended(
    id: string,
    toolkit: string,
    endpoint: string,
    status: string,
    exitCode: number | null,
    durationMs: number | null,
    reason: string | null,
    userId: number | null = null,
  ): void {
    this.s.metrics.runEnded(toolkit, endpoint, status);
    void this.s.audit.record({
      actor: 'system',
      actorUserId: userId,
      action: 'run_end',
      toolkit,
      endpoint,
      status: null,
      code: status,
      durationMs,
      details: { run_id: id, status, exit_code: exitCode, ...(reason ? { reason } : {}), ...(durationMs !== null ? { duration_ms: durationMs } : {}) },
    });
  }

  /** Stops a run of this instance: SIGTERM now, SIGKILL after `graceMs`. */
  stopLocal(id: string, stopped: NonNullable<LocalRun['stopped']>, graceMs: number): boolean {
    const local = this.local.get(id);
    if (!local) return false;
    local.stopped ??= stopped;
    local.grace = graceMs;
    local.controller.abort(new Error(stopped.by === 'cancel' ? 'the run was cancelled' : 'the gateway is stopping'));
    return true;
  }

  isLocal(id: string): boolean {
    return this.local.has(id);
  }

  private async seeCancellations(): Promise<void> {
    for (const { id, cancelled_by } of await this.store.cancelRequested(this.instance)) {
      const local = this.local.get(id);
      if (local && !local.controller.signal.aborted) this.stopLocal(id, { by: 'cancel', who: cancelled_by ?? '' }, this.s.config.runs.cancel_grace_ms);
    }
  }

  private async heartbeat(now: number): Promise<void> {
    for (const local of this.local.values()) await this.store.heartbeat(local.id, now, local.output.bytes, local.output.truncated);
  }

  /** Runs whose instance has not been heard of for runs.lost_after end lost, by whichever instance sees it first. */
  private async endSilent(now: number): Promise<void> {
    const before = now - this.s.config.runs.lost_after_ms;
    for (const run of await this.store.silent(before)) {
      if (this.local.has(run.id)) continue;
      if (!(await this.store.endLost(run.id, before, now))) continue;
      this.log.warn('run lost: its instance stopped recording heartbeats', { run_id: run.id, instance: run.instance });
      this.feeds.ended(run.id, { status: 'lost', exit_code: null });
      this.ended(run.id, run.toolkit, run.endpoint, 'lost', null, run.started_at === null ? null : now - run.started_at, 'instance_lost');
    }
  }

  private async purge(now: number): Promise<void> {
    const purged = await this.store.purge(this.s.config.runs.retention_ms, now);
    if (purged !== undefined && purged > 0) this.log.info('runs purged', { purged });
  }

  /**
   * SIGTERM: no more runs start here; running ones get runs.drain_timeout to end, then are killed and end failed
   * (gateway_stopped). Followers' streams end (without `end`), so their clients resume on another instance.
   */
  async stop(): Promise<void> {
    this.draining = true;
    clearInterval(this.timer);
    this.stopping.abort(new Error('the gateway is stopping'));
    await settleWithin(Promise.all([...this.dryRuns]), KILLED_WAIT_MS);
    if (this.local.size > 0) {
      this.log.info('waiting for runs to end', { runs: this.local.size, drain_timeout_ms: this.s.config.runs.drain_timeout_ms });
      const all = () => Promise.all([...this.local.values()].map((local) => local.done));
      await settleWithin(all(), this.s.config.runs.drain_timeout_ms);
      for (const id of [...this.local.keys()]) this.stopLocal(id, { by: 'gateway' }, 0);
      await settleWithin(all(), KILLED_WAIT_MS);
    }
    while (this.ticking) await new Promise((resolve) => setTimeout(resolve, 20));
    this.feeds.close();
  }

  /** Runs started here and not ended: for the drain. */
  get running(): number {
    return this.local.size;
  }
}

async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

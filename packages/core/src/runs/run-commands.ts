import { randomBytes } from 'node:crypto';
import type { AuditActor, AuditEvent } from '../audit/audit-event.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { Authenticated } from '../auth/authenticate.js';
import type { InternalAnswer, InternalCalls, InternalRunOptions } from '../auth/internal-calls.js';
import { coreError, GatewayError, invalidPayload, type FieldProblem } from '../errors.js';
import type { DetachedPlan } from '../plugins/plugin-api.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import { approvalOf, type ApprovalBinding } from './approvals/approval-binding.js';
import { approverOf, checkDecider, type Decider } from './approvals/approval-deciders.js';
import type { DryRuns } from './approvals/dry-runs.js';
import { concurrencyKeyOf, queueOf } from './endpoint-plans.js';
import type { StopCause } from './run-endings.js';
import { ENDED_STATUSES, WAITING_STATUSES, type RunRow } from './run-record.js';
import { RERUN_STATUSES, selectRunNodes, type RunNodes } from './run-nodes.js';
import type { DecisionOutcome, NewRun, RunStore, WaitingQueue } from './run-store.js';
import type { RunTransitions } from './run-transitions.js';

/**
 * Run ids: 128 random bits in hex (32 characters). Not base64url: an id starting with `-` read as an option by
 * `tkgate runs show|cancel|approve ID` (one run in 32), and ids are typed and pasted by people.
 */
export const newRunId = (): string => randomBytes(16).toString('hex');

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
  /** A call the gateway made itself (auth/internal-calls.ts): a schedule's fire, a fleet's rerun; or a trigger's (its actor). */
  internal?: InternalRunOptions;
  /** The call's address (`tk/<kind>/<toolkit>/<path>`): what a rerun of a run with nodes calls again. */
  address?: { kind: string; path: string };
}

/** Who asks for a cancel or a decision, as its audit event names them: the request's caller, or `cli`. */
export interface CommandCaller {
  /** As `cancelled_by` records it. */
  name: string;
  audit: Pick<AuditEvent, 'requestId' | 'actorUserId' | 'actor' | 'credential' | 'client'>;
}

/** The operator at the server (`tkgate runs ...`). */
export const OPERATOR: CommandCaller = { name: 'cli', audit: { actor: 'cli' } };

const busy = () => new GatewayError(503, 'busy', 'too many runs of this endpoint are waiting; try again shortly', { headers: { 'Retry-After': '5' } });
const runEnded = (status: string) => coreError('run_ended', `the run has ended (${status})`, { details: { status } });
const notPending = (status: string) => coreError('run_not_pending', `the run is not awaiting approval (${status})`, { details: { status } });

/** The run's own columns say these of its actor. */
const ACTOR_COLUMNS = new Set(['kind', 'user_id', 'username']);

/** An internal call's actor details beyond its user and kind (a trigger's scheme and delivery id, a schedule's id), kept with the run; else null. */
function actorDetailsOf(internal: InternalRunOptions | undefined): Readonly<Record<string, unknown>> | null {
  if (!internal?.actor) return null;
  const details = Object.fromEntries(Object.entries(internal.actor).filter(([key]) => !ACTOR_COLUMNS.has(key)));
  return Object.keys(details).length > 0 ? details : null;
}

/** What a rerun asks for (docs/fleet.md, "Reruns"): which nodes, and the payload fields sent again (secret fields). */
export interface RerunAsked {
  nodes: 'failed' | 'all';
  payload: Record<string, unknown>;
}

/** A rerun's body `{"nodes"?, "payload"?}` checked (the route's and the CLI's): 400 naming the field. */
export function rerunAsked(body: Readonly<Record<string, unknown>>): RerunAsked {
  const problems: FieldProblem[] = [];
  const nodes = body.nodes ?? 'failed';
  if (nodes !== 'failed' && nodes !== 'all') problems.push({ field: 'nodes', rule: 'allowed_values', message: 'nodes must be "failed" or "all"' });
  const payload = body.payload ?? {};
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
    problems.push({ field: 'payload', rule: 'type', message: 'payload must be an object of the fields to send again' });
  for (const key of Object.keys(body))
    if (key !== 'nodes' && key !== 'payload') problems.push({ field: key, rule: 'unknown', message: `${key} is not a field of a rerun` });
  if (problems.length > 0) throw invalidPayload(problems);
  return { nodes: nodes as RerunAsked['nodes'], payload: payload as Record<string, unknown> };
}

/** Who asks for a rerun: the caller the call is made as, and (the CLI's) the run's actor beyond its credential. */
export interface RerunCaller {
  authenticated: Authenticated;
  actor?: Readonly<Record<string, unknown>>;
  requestId?: string;
}

const notRerunnable = (reason: string, message: string) => coreError('not_rerunnable', message, { details: { reason } });

/** The run a transition is about. */
const subject = (run: RunRow) => ({ id: run.id, toolkit: run.toolkit, endpoint: run.endpoint, userId: run.user_id });

/**
 * The commands on runs (docs/runs.md): submit, cancel, decide (approve or reject) and rerun. The HTTP routes,
 * the CLI, schedules and triggers (through internal calls) all call these, so each rule lives here once: the
 * cancel's sequence, who may decide, the comment, the pending check and the definition the approval binds. Who
 * may see a run is the caller's business (the routes answer 404 first); who may cancel it is `mayCancel`'s.
 */
export class RunCommands {
  constructor(
    private readonly s: {
      store: RunStore;
      transitions: RunTransitions;
      binding: ApprovalBinding;
      audit: Pick<AuditTrail, 'record'>;
      adminPower: number;
      cancelGraceMs: number;
      /** The gateway's side (absent in the CLI): dry runs, runs going on here, and the queue's wake-ups. */
      dryRuns?: DryRuns;
      local?: { stop(id: string, cause: StopCause, graceMs: number): boolean };
      queue?: { wake(): void; wakeFor(queue: WaitingQueue): void };
      /** A cancel of a run that does not run here was recorded: the instance running it is told. */
      cancelAsked?(id: string): void;
      /** Runs with nodes, and the gateway's own calls (a rerun is one): absent, nothing can be rerun. */
      nodes?: RunNodes;
      internalCalls?: Pick<InternalCalls, 'call'>;
    },
  ) {}

  /** Records a call's run; 503 busy when its queue is full, 400 when its concurrency key is no scalar. Resolves to the run's id. */
  async submit(request: RunRequest): Promise<string> {
    const { endpoint, plan, internal } = request;
    const queuedAt = Date.now();
    const approval = approvalOf(endpoint, queuedAt);
    const actorKind = typeof internal?.actor?.kind === 'string' ? internal.actor.kind : request.actor;
    const run: NewRun = {
      id: newRunId(),
      toolkit: endpoint.toolkit,
      endpoint: endpoint.path,
      method: request.method,
      concurrencyKey: plan.concurrencyKey ? concurrencyKeyOf(plan.concurrencyKey, request) : null,
      userId: request.caller.id,
      username: request.caller.username,
      actor: actorKind,
      actorDetails: actorDetailsOf(internal),
      requestId: request.requestId,
      viewPower: plan.viewPower ?? this.s.adminPower,
      cancelPower: plan.cancelPower ?? this.s.adminPower,
      payload: request.keptPayload,
      context: request.context,
      queuedAt,
      ...(approval && { approval }),
    };
    // A type that runs on nodes selects them now: fixed with the run, shown to its approvers (run-nodes.ts).
    const nodes = await selectRunNodes(endpoint, { ...request, ...(internal && { rerun: internal }) });
    if (nodes) run.nodes = nodes;
    const queue: WaitingQueue = { queue: queueOf(run.toolkit, run.endpoint, run.method), toolkit: run.toolkit, endpoint: run.endpoint, method: run.method };
    if (!(await this.s.transitions.submit(queue.queue, run, plan.maxQueued, internal))) throw busy();
    if (!approval) {
      this.s.queue?.wakeFor(queue);
      return run.id;
    }
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
      details: { run_id: run.id, quorum: approval.quorum, expires_at: new Date(approval.expiresAt).toISOString() },
    });
    if (approval.dryRun) this.s.dryRuns?.start(run.id, endpoint, request.context);
    return run.id;
  }

  /**
   * Whether a caller may cancel a run (besides the operator): its own caller, or power at least the run's
   * cancel_power, or auth.admin_power; through an API key only one whose scope holds the toolkit.
   */
  mayCancel(caller: { id: number; power: number }, run: RunRow, scope?: ReadonlySet<string>): boolean {
    if (scope && !scope.has(run.toolkit)) return false;
    return run.user_id === caller.id || caller.power >= run.cancel_power || caller.power >= this.s.adminPower;
  }

  /**
   * Cancels a run (`run_cancel`): a waiting one ends `cancelled` at once; a running one is marked, and the instance
   * running it (this one at once, another within a tick) stops it: SIGTERM, then SIGKILL after runs.cancel_grace.
   * An ended run is 409 run_ended. Resolves to the run as it is now and whether it ended here or is ending.
   */
  async cancel(run: RunRow, by: CommandCaller): Promise<{ run: RunRow; how: 'cancelled' | 'cancelling' }> {
    if (ENDED_STATUSES.has(run.status)) throw runEnded(run.status);
    const now = Date.now();
    let how: 'cancelled' | 'cancelling' = 'cancelling';
    if (WAITING_STATUSES.has(run.status) && (await this.s.transitions.cancelWaiting(subject(run), by.name, now))) how = 'cancelled';
    else if (await this.s.store.requestCancel(run.id, by.name, now)) {
      // Running elsewhere: the instance running it is told at once (its poll finds it anyway).
      if (!this.s.local?.stop(run.id, { by: 'cancel', who: by.name }, this.s.cancelGraceMs)) this.s.cancelAsked?.(run.id);
    } else {
      const again = await this.s.store.get(run.id);
      if (again && ENDED_STATUSES.has(again.status)) throw runEnded(again.status);
    }
    await this.s.audit.record({
      ...by.audit,
      action: 'run_cancel',
      toolkit: run.toolkit,
      endpoint: run.endpoint,
      status: 202,
      code: 'ok',
      details: { run_id: run.id },
    });
    return { run: (await this.s.store.get(run.id)) ?? run, how };
  }

  /**
   * An approver's decision (docs/runs.md, "Approvals"): 403 unless the decider may decide (approval-deciders.ts);
   * 409 run_not_pending unless the run awaits approval still, within its `expires` and for the definition it was
   * asked for (else it ends expired here); 409 already_decided for a second decision of one approver. A reject ends
   * the run `rejected`; the quorum's last approval queues it, exactly once across instances. `comment` was checked
   * by the caller (decisionComment). Recorded as `run_approve` / `run_reject`.
   */
  async decide(
    run: RunRow,
    decider: Decider,
    decision: 'approve' | 'reject',
    comment: string | null,
    by: CommandCaller,
  ): Promise<{ run: RunRow; outcome: Exclude<DecisionOutcome, 'not_pending' | 'already_decided'> }> {
    checkDecider(decider, run);
    if (!(await this.s.binding.stillPending(run))) throw notPending('expired');
    const outcome = await this.s.transitions.decide(subject(run), approverOf(decider), decision, comment, Date.now(), async (outcome) => {
      if (outcome === 'not_pending' || outcome === 'already_decided') return;
      await this.s.audit.record({
        ...by.audit,
        action: decision === 'approve' ? 'run_approve' : 'run_reject',
        toolkit: run.toolkit,
        endpoint: run.endpoint,
        status: 200,
        code: 'ok',
        details: { run_id: run.id, ...(comment !== null ? { comment } : {}), ...(outcome === 'queued' ? { queued: true } : {}) },
      });
    });
    if (outcome === 'already_decided') throw coreError('already_decided', 'you have decided on this run already');
    if (outcome === 'queued') this.s.queue?.wake();
    const now = (await this.s.store.get(run.id)) ?? run;
    if (outcome === 'not_pending') throw notPending(now.status);
    return { run: now, outcome };
  }

  /**
   * A rerun (docs/fleet.md, "Reruns"): a new run of the same endpoint and payload on the run's failed, timed-out,
   * cancelled and skipped nodes (or all), called as `by` through the gateway's own stack (InternalCalls), so every
   * rule of a call holds: who may call the endpoint, its approval asked again, its queue, the audit trail, a secret
   * field missing (400 naming it). `asked.payload` adds what was not kept over the kept payload. 409 not_rerunnable
   * (`no_nodes`, `not_ended`, `no_failed_nodes`, `not_kept`) before any call. Resolves to the call's answer.
   */
  async rerun(run: RunRow, asked: RerunAsked, by: RerunCaller): Promise<InternalAnswer> {
    if (run.node_count === null) throw notRerunnable('no_nodes', 'only a run with nodes can be rerun');
    if (!ENDED_STATUSES.has(run.status)) throw notRerunnable('not_ended', `the run has not ended (${run.status})`);
    const { nodes, internalCalls } = this.s;
    if (!nodes || !internalCalls) throw notRerunnable('not_kept', 'the run does not keep what a rerun needs');
    const [names, replay] = await Promise.all([nodes.names(run.id, asked.nodes === 'all' ? undefined : RERUN_STATUSES), nodes.replay(run.id)]);
    if (names.length === 0) throw notRerunnable('no_failed_nodes', 'every node of the run succeeded');
    if (!replay) throw notRerunnable('not_kept', 'the run does not keep what a rerun needs');
    const payload = { ...replay.payload, ...asked.payload };
    return internalCalls.call({
      kind: replay.kind,
      toolkit: run.toolkit,
      path: replay.path,
      method: run.method,
      ...(run.method === 'GET' ? { query: Object.fromEntries(Object.entries(payload).map(([key, value]) => [key, String(value)])) } : { payload }),
      as: { authenticated: by.authenticated, run: { rerunOf: run.id, nodes: names, ...(by.actor && { actor: by.actor }) } },
      ...(by.requestId !== undefined && { requestId: by.requestId }),
    });
  }
}

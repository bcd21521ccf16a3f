import type { InternalCalls } from '../auth/internal-calls.js';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import { describeDatabaseError } from '../db/database-errors.js';
import { scopedLogger, type Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import { ApprovalBinding } from './approvals/approval-binding.js';
import { DryRuns } from './approvals/dry-runs.js';
import { EndpointPlans } from './endpoint-plans.js';
import { RunHousekeeping } from './housekeeping.js';
import { LocalRuns } from './local-runs.js';
import { RunFeeds } from './output/run-feeds.js';
import { RunCommands } from './run-commands.js';
import { RunNodes } from './run-nodes.js';
import { runEndings } from './run-endings.js';
import { RunQueue, storeClaim } from './run-queue.js';
import { RunStore, type WaitingQueue } from './run-store.js';
import { ENDED_STATUSES } from './run-record.js';
import { RunTransitions } from './run-transitions.js';
import { RunWakeups } from './run-wakeups.js';
import type { Wakeups } from '../wakeups/wakeups.js';

/** The longest between two ticks: approvals' deadlines are looked for each second, heartbeats as often as runs.heartbeat. */
const TICK_MAX_MS = 1_000;
/** An interval may fire a millisecond early: a poll would then wait a whole tick more. */
const TIMER_SLACK_MS = 25;
/** How often an instance looks for runs whose approval ran out. */
const EXPIRY_CHECK_MS = 1_000;

export interface RunsServices {
  config: ServerConfig;
  db: Database;
  registry: ToolkitRegistry;
  log: Logger;
  audit: AuditTrail;
  metrics: GatewayMetrics;
  /** How instances wake each other (runs.wakeups); polling alone without. */
  wakeups?: Wakeups;
  /** The gateway's calls of its own endpoints: a rerun is one (RunCommands.rerun). */
  internalCalls?: InternalCalls;
  /**
   * false: this process records runs but never claims one (the CLI's `tkgate runs rerun`: its run is claimed by a
   * gateway instance, woken as any instance wakes the others; the process ends right after).
   */
  claims?: boolean;
}

/**
 * Runs on this instance (docs/runs.md, docs/architecture.md "Runs"): the composer of the runs domain. It wires the
 * store, the one seam of state changes (transitions), what an endpoint's run needs (plans), the queue and its
 * claims, the runs going on here, approvals, housekeeping and output, and runs the tick: the one list of what an
 * instance does each runs.poll_interval (and at once when a run is asked for or ends here).
 */
export class Runs {
  readonly store: RunStore;
  readonly transitions: RunTransitions;
  readonly plans: EndpointPlans;
  readonly feeds: RunFeeds;
  readonly commands: RunCommands;
  /** The wake-ups this instance tells and hears (run-wakeups.ts). */
  readonly wakeups: RunWakeups;
  /** The nodes of runs with nodes (run-nodes.ts). */
  readonly nodes: RunNodes;
  /** This instance, as runs record it: host, pid and a random part (a restart is another instance). */
  readonly instance = `${hostname().slice(0, 30)}:${process.pid}:${randomBytes(6).toString('hex')}`;
  private readonly binding: ApprovalBinding;
  private readonly dryRuns: DryRuns;
  private readonly queue: RunQueue;
  private readonly local: LocalRuns;
  private readonly housekeeping: RunHousekeeping;
  private lastExpiry = 0;
  /** When every queue and this instance's cancels were last looked at without a wake-up (runs.poll_interval). */
  private lastPoll = 0;
  /** A cancel of a run of this instance was told: looked for in the next tick. */
  private cancelDue = false;
  private timer: NodeJS.Timeout | undefined;
  /** The two lanes of a look (see look()). */
  private readonly claims = new Lane(() => this.claimsPass());
  private readonly chores = new Lane(() => this.choresPass());
  private draining = false;
  private readonly log: Logger;

  constructor(private readonly s: RunsServices) {
    const { config, audit, metrics } = s;
    const snapshot = () => s.registry.snapshot;
    this.log = scopedLogger(s.log, { component: 'runs' });
    this.store = new RunStore(s.db);
    this.nodes = new RunNodes(s.db);
    this.transitions = new RunTransitions(this.store);
    this.plans = new EndpointPlans(snapshot);
    this.wakeups = new RunWakeups(s.wakeups, s.registry, { woken: (kind, queue) => this.woken(kind, queue), feeds: { poke: (id) => this.feeds.poke(id) } });
    this.feeds = new RunFeeds(this.store, this.log, () => this.wakeups.followPollMs(config.runs.poll_interval_ms), {
      perRun: config.runs.max_followers_per_run,
      perUser: config.runs.max_followers_per_user,
    });
    this.transitions.onChange(runEndings({ audit, metrics, feeds: this.feeds }));
    // A run's end is its followers' last word: those on other instances read it now.
    this.transitions.onChange((change) => {
      if (ENDED_STATUSES.has(change.to)) this.wakeups.output(change.run.id);
    });
    this.binding = new ApprovalBinding({ store: this.store, transitions: this.transitions, plans: this.plans, audit });
    this.dryRuns = new DryRuns(this.store, s.log, s.registry.types.secrets.mask);
    this.local = new LocalRuns({
      config,
      store: this.store,
      transitions: this.transitions,
      feeds: this.feeds,
      log: this.log,
      instance: this.instance,
      nodes: this.nodes,
      freed: (queue) => {
        this.queue.freed(queue);
        this.wakeups.freed(queue.queue);
      },
      stored: (id) => this.wakeups.output(id),
      mask: s.registry.types.secrets.mask,
    });
    this.queue = new RunQueue({
      store: this.store,
      transitions: this.transitions,
      plans: this.plans,
      claim: storeClaim(this.transitions, this.instance),
      start: (run, endpoint, plan) => this.local.run(run, endpoint, plan),
      look: () => this.look(),
      draining: () => this.draining,
    });
    this.housekeeping = new RunHousekeeping({ config, store: this.store, transitions: this.transitions, local: this.local, log: this.log });
    this.commands = new RunCommands({
      store: this.store,
      transitions: this.transitions,
      binding: this.binding,
      audit,
      adminPower: config.auth.admin_power,
      cancelGraceMs: config.runs.cancel_grace_ms,
      dryRuns: this.dryRuns,
      local: this.local,
      queue: {
        wake: () => {
          if (s.claims !== false) this.queue.wake();
          this.wakeups.queued();
        },
        wakeFor: (queue) => {
          if (s.claims !== false) this.queue.wakeFor(queue);
          this.wakeups.queued(queue.queue);
        },
      },
      cancelAsked: (id) => this.wakeups.cancelAsked(id),
      nodes: this.nodes,
      ...(s.internalCalls && { internalCalls: s.internalCalls }),
    });
    metrics.runs(
      () => this.local.size,
      () => this.store.countQueued(),
      () => this.store.countAwaiting(),
    );
  }

  start(): void {
    const { poll_interval_ms, heartbeat_ms } = this.s.config.runs;
    this.timer = setInterval(() => this.look(), Math.min(poll_interval_ms, heartbeat_ms, TICK_MAX_MS));
    this.timer.unref();
    this.queue.wake();
  }

  /** Another instance's wake-up (run-wakeups.ts): a run queued or a place freed in a queue, a cancel asked, all at once. */
  private woken(kind: 'queued' | 'freed' | 'cancel' | 'all', queue?: WaitingQueue): void {
    if (kind === 'cancel') {
      if (this.local.size === 0) return;
      this.cancelDue = true;
      return this.look();
    }
    if (kind === 'all' || !queue) {
      this.cancelDue = this.local.size > 0;
      return this.queue.wake();
    }
    if (kind === 'freed') this.queue.freed(queue);
    else this.queue.wakeFor(queue);
  }

  /**
   * A look: the claims (and cancels) at once, the housekeeping when some of it is due. Two lanes, each one pass at a
   * time (a look asked for during its pass runs right after it): a wake-up's claim or cancel never waits behind a
   * heartbeat, the lost runs' check or a purge, a few round trips each on a loaded database.
   */
  private look(): void {
    this.claims.run();
    this.chores.run();
  }

  /** The claims' lane: every queue each runs.poll_interval (sooner when woken), this instance's cancels first. */
  private async claimsPass(): Promise<void> {
    const now = Date.now();
    const polled = now - this.lastPoll >= this.s.config.runs.poll_interval_ms - TIMER_SLACK_MS;
    if (polled) {
      this.lastPoll = now;
      this.queue.wake();
    }
    const cancels = polled || this.cancelDue;
    this.cancelDue = false;
    const steps: Array<[string, () => Promise<unknown>]> = [];
    // A gateway whose toolkits run no job pays nothing here (no query every tick): runs nobody configured cost nothing.
    const active = this.local.size > 0 || this.plans.servesJobs();
    const snapshot = this.s.registry.snapshot;
    if (active && !this.binding.checkedAgainst(snapshot)) steps.push(['definitions', () => this.binding.checkBound(snapshot)]);
    // Cancels before the claim: a cancel's wake-up waits for no claim of the queues (a few round trips each).
    if (this.local.size > 0 && cancels) steps.push(['cancel', () => this.local.seeCancellations()]);
    if (active && !this.draining) steps.push(['claim', () => this.queue.claimQueued()]);
    await this.steps(steps);
  }

  /** The housekeeping lane: approvals run out, heartbeats and lost runs, the purge, each when due. */
  private async choresPass(): Promise<void> {
    const now = Date.now();
    const steps: Array<[string, () => Promise<unknown>]> = [];
    const active = this.local.size > 0 || this.plans.servesJobs();
    if (active && now - this.lastExpiry >= EXPIRY_CHECK_MS && this.plans.servesApprovals()) {
      this.lastExpiry = now;
      steps.push(['expiry', () => this.binding.expireOverdue(now)]);
    }
    if (active && this.housekeeping.heartbeatDue(now))
      steps.push(['heartbeat', () => this.housekeeping.heartbeat(now)], ['lost', () => this.housekeeping.endSilent(now)]);
    if (this.housekeeping.purgeDue(now)) steps.push(['purge', () => this.housekeeping.purge(now)]);
    await this.steps(steps);
  }

  /** Steps in order; a step that fails is logged and the others go on. */
  private async steps(steps: Array<[string, () => Promise<unknown>]>): Promise<void> {
    for (const [step, work] of steps) {
      try {
        await work();
      } catch (err) {
        this.log.warn('runs housekeeping failed', { step, ...describeDatabaseError(err) });
      }
    }
  }

  /**
   * SIGTERM: no more runs start here; running ones get runs.drain_timeout to end, then are killed and end failed
   * (gateway_stopped). Followers' streams end (without `end`), so their clients resume on another instance.
   * The tick goes on while they drain (`draining` leaves out its claims only): their heartbeats, their cancels and
   * the look for silent runs. Stopped before them, no heartbeat was written during the drain, and another instance
   * ended them lost after runs.lost_after and started the next run of their concurrency_key beside them.
   */
  async stop(): Promise<void> {
    this.draining = true;
    await this.dryRuns.stop();
    await this.local.drain(this.log);
    clearInterval(this.timer);
    while (this.claims.busy || this.chores.busy) await new Promise((resolve) => setTimeout(resolve, 20));
    this.feeds.close();
    this.wakeups.close();
  }

  /** Runs started here and not ended: for the drain. */
  get running(): number {
    return this.local.size;
  }
}

/** Passes of one kind of work, one at a time: one asked for during a pass runs once, right after it. */
class Lane {
  busy = false;
  private again = false;

  constructor(private readonly pass: () => Promise<void>) {}

  run(): void {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    void this.pass().finally(() => {
      this.busy = false;
      if (this.again) {
        this.again = false;
        setImmediate(() => this.run());
      }
    });
  }
}

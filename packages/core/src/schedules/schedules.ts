import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { InternalAnswer, InternalCalls } from '../auth/internal-calls.js';
import type { Database } from '../db/connect.js';
import { describeDatabaseError } from '../db/database-errors.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { CompiledEndpoint, CompiledSchedule } from '../toolkits/compiled-toolkit.js';
import type { ToolkitRegistry, ToolkitSnapshot } from '../toolkits/toolkit-registry.js';
import type { UserDirectory } from '../users/user-directory.js';
import { ScheduleStore, type AlsoWrite, type FireOutcome } from './schedule-store.js';

/**
 * The schedules domain (docs/schedules.md), in this folder:
 * - `toolkits/schedule-times.ts` (below, as the toolkit compiler checks `cron` and `timezone` too): the fire times
 *   croner finds in the schedule's zone, with our daylight-saving rules;
 * - `schedule-store.ts`: the tables (`schedule_fires`, whose primary key is the exactly-once rule; `schedule_states`);
 * - `schedules.ts` (this file): the ticker and the fire, on every instance;
 * - `schedule-commands.ts`: list, fires, preview, pause and resume, for the routes and the CLI alike;
 * - `schedule-routes.ts`: `GET {base}/schedules`, `…/{id}/fires`, `…/{id}/preview`, `POST …/{id}/pause|resume`.
 */

/** A schedule as this instance follows it. */
interface Followed {
  schedule: CompiledSchedule;
  endpoint: CompiledEndpoint;
  /** The last fire time handled here (fired, left to another instance, or recorded missed). */
  cursor: number;
  /** When this instance began following it: earlier fires are ones nobody may have been up for (missed). */
  since: number;
  /** The next fire time after the cursor. */
  next: number | undefined;
  /** Fires of `overlap: queue` claimed here, waiting for the schedule's previous run to end, oldest first. */
  held: number[];
  /** Fires from before this instance followed the schedule, not claimed yet: made up or recorded missed once settled. */
  catchUp: number[];
  /** Fires of the catch-up not listed one by one (-1: some before the window, uncounted). */
  unlisted: number;
}

/** The longest a timer waits: pause, resume and reloads are seen within a second. */
const MAX_WAIT_MS = 1_000;
/** A fire due up to this long before this instance began following its schedule is still an on-time fire here. */
const START_GRACE_MS = 1_000;
/**
 * How old the latest fire from before this instance's start must be before the catch-up decides: instances that
 * were up have claimed their fires by then, so only fires nobody was up for are made up or recorded missed.
 */
const CATCH_UP_SETTLE_MS = 5_000;
/** The older missed fires of one downtime recorded one by one (the latest ones); more are counted in the log. */
const MISSED_RECORDED = 100;
const DAY_MS = 86_400_000;

export interface SchedulesServices {
  db: Database;
  registry: ToolkitRegistry;
  users: UserDirectory;
  internalCalls: InternalCalls;
  audit: AuditTrail;
  metrics: GatewayMetrics;
  log: Logger;
  /** A fire's `schedule.missed` or `schedule.failed`, written in the outcome's own transaction (notifications/). */
  fireEvents?: (trx: Knex.Transaction, event: ScheduleFireEvent) => Promise<void>;
}

/** What the outbox of notifications is told of a fire that missed or failed. */
export interface ScheduleFireEvent {
  type: 'schedule.missed' | 'schedule.failed';
  schedule: string;
  toolkit: string;
  endpoint: string;
  method: string;
  fireAt: number;
  reason: string | null;
  at: number;
}

/** How a fire's call ended, as its outcome and reason. */
function outcomeOf(answer: InternalAnswer): { outcome: FireOutcome; runId: string | null; reason: string | null } {
  const body = answer.body as { data?: { run_id?: string }; error?: { code?: string; message?: string; details?: unknown } } | undefined;
  if (answer.status === 202 && typeof body?.data?.run_id === 'string') return { outcome: 'started', runId: body.data.run_id, reason: null };
  const code = body?.error?.code ?? `status_${answer.status}`;
  if (code === 'invalid_payload') {
    const fields = Array.isArray(body?.error?.details) ? (body.error.details as Array<{ field?: string; message?: string }>) : [];
    const said = fields.map((problem) => problem.message ?? problem.field).filter(Boolean);
    return { outcome: 'failed', runId: null, reason: `payload fails client_filter: ${said.join('; ') || 'invalid'}` };
  }
  if (code === 'busy') return { outcome: 'failed', runId: null, reason: "queue full: the endpoint's max_queued runs are waiting" };
  return { outcome: 'failed', runId: null, reason: `${code}: ${body?.error?.message ?? `the call answered ${answer.status}`}` };
}

/**
 * The schedules of the live toolkits, fired on this instance. One timer, set for the next fire of any schedule (at
 * most a second away); none while no schedule exists, until a reload brings one. A due fire is claimed by inserting
 * its row (in the claim of db/claims.ts, ScheduleStore.claim): the instance whose insert succeeds fires it (its run is an internal call of the endpoint as the
 * schedule's `as` user, through the one Koa stack), every other meets the key and moves on.
 */
export class Schedules {
  readonly store: ScheduleStore;
  private readonly followed = new Map<string, Followed>();
  private seen: ToolkitSnapshot | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;
  private started = false;

  constructor(private readonly s: SchedulesServices) {
    this.store = new ScheduleStore(s.db);
  }

  /** The schedules of a snapshot, by id, with their endpoints. */
  static of(snapshot: ToolkitSnapshot): Map<string, { schedule: CompiledSchedule; endpoint: CompiledEndpoint }> {
    const found = new Map<string, { schedule: CompiledSchedule; endpoint: CompiledEndpoint }>();
    for (const toolkit of snapshot.values()) {
      if (!toolkit.enabled) continue;
      for (const byMethod of toolkit.routes.values())
        for (const endpoint of new Set(byMethod.values())) for (const schedule of endpoint.schedules ?? []) found.set(schedule.id, { schedule, endpoint });
    }
    return found;
  }

  async start(): Promise<void> {
    this.started = true;
    await this.follow(true);
    this.arm();
  }

  /** After a reload: a changed cron or zone applies from the next fire, a removed schedule fires no more. */
  reloaded(): void {
    if (!this.started || this.stopped) return;
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    // A catch-up not settled yet is decided now: the next start would not see these fires again.
    const now = Date.now();
    for (const followed of this.followed.values())
      if (followed.catchUp.length > 0)
        await this.catchUp(followed, now).catch((err: unknown) => this.s.log.error('schedule catch-up failed', { err: describeDatabaseError(err) }));
    // Held fires die with the instance that holds them: recorded, never left pending.
    for (const followed of this.followed.values())
      for (const at of followed.held.splice(0))
        await this.end(followed, at, 'failed', null, 'gateway_stopped: the instance holding this fire stopped').catch(() => undefined);
  }

  /** Takes the live snapshot's schedules: new ones from the database's record (at start) or from now (a reload). */
  private async follow(atStart: boolean): Promise<void> {
    const snapshot = this.s.registry.snapshot;
    if (snapshot === this.seen) return;
    const live = Schedules.of(snapshot);
    const fresh = [...live.keys()].filter((id) => !this.followed.has(id));
    for (const id of this.followed.keys()) if (!live.has(id)) this.followed.delete(id);
    const now = Date.now();
    if (fresh.length > 0) {
      const [states, latest] = await Promise.all([this.store.states(fresh, now), this.store.latestFires(fresh)]);
      for (const id of fresh) {
        const cursor = atStart ? Math.max(latest.get(id) ?? 0, states.get(id)?.since ?? now) : now;
        this.followed.set(id, { ...live.get(id)!, cursor, since: now, next: undefined, held: [], catchUp: [], unlisted: 0 });
      }
    }
    for (const [id, followed] of this.followed) {
      const current = live.get(id)!;
      followed.schedule = current.schedule;
      followed.endpoint = current.endpoint;
      followed.next = followed.schedule.times.next(followed.cursor);
    }
    this.seen = snapshot;
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped || this.followed.size === 0) return;
    let next = Infinity;
    for (const followed of this.followed.values()) if (followed.next !== undefined) next = Math.min(next, followed.next);
    const wait = Math.max(0, Math.min(next - Date.now(), MAX_WAIT_MS));
    this.timer = setTimeout(() => this.wake(), wait);
    this.timer.unref();
  }

  private wake(): void {
    if (this.ticking || this.stopped) return;
    this.ticking = this.tick()
      .catch((err: unknown) => this.s.log.error('schedule tick failed', { err: describeDatabaseError(err) }))
      .finally(() => {
        this.ticking = undefined;
        this.arm();
      });
  }

  private async tick(): Promise<void> {
    await this.follow(false);
    const now = Date.now();
    await Promise.all(
      [...this.followed.values()].map(async (followed) => {
        await this.releaseHeld(followed);
        if (followed.next !== undefined && followed.next <= now) await this.due(followed, now);
        const latest = followed.catchUp.at(-1);
        if (latest !== undefined && now - latest >= CATCH_UP_SETTLE_MS) await this.catchUp(followed, now);
      }),
    );
  }

  /** The fires of one schedule due by `now`: on time ones fired, those from before this instance's start kept for the catch-up. */
  private async due(followed: Followed, now: number): Promise<void> {
    const { schedule, catchUp } = followed;
    const onTime: number[] = [];
    let at = followed.next;
    // A long downtime: fires before the missed window (and a day) are neither made up nor listed one by one.
    const floor = now - Math.max(schedule.missedWindowMs, DAY_MS);
    if (at !== undefined && at < floor) {
      at = schedule.times.next(floor);
      followed.unlisted = -1;
    }
    while (at !== undefined && at <= now) {
      if (at > followed.since - START_GRACE_MS) onTime.push(at);
      else if (catchUp.push(at) > MISSED_RECORDED + 1) {
        catchUp.shift();
        if (followed.unlisted >= 0) followed.unlisted++;
      }
      followed.cursor = at;
      at = schedule.times.next(at);
    }
    followed.next = at;
    for (const fire of onTime) await this.fire(followed, fire, false);
  }

  /** After a downtime: the latest missed fire made up (`missed: latest`, within `missed_window`), the others recorded missed. */
  private async catchUp(followed: Followed, now: number): Promise<void> {
    const { schedule } = followed;
    const older = followed.catchUp.splice(0);
    const latest = older.at(-1)!;
    const makeUp = schedule.missed === 'latest' && now - latest <= schedule.missedWindowMs ? latest : undefined;
    const reason =
      schedule.missed === 'skip' ? 'missed: skip (the gateway was down)' : 'the gateway was down (only the latest missed fire within missed_window is made up)';
    for (const missed of older)
      if (missed !== makeUp && (await this.store.claim(schedule.id, missed, 'missed', reason, this.eventOf(followed, 'schedule.missed', missed, reason))))
        this.recorded(followed, missed, 'missed', null, reason, false);
    if (followed.unlisted !== 0)
      this.s.log.warn('schedule: older missed fires not recorded one by one', {
        schedule: schedule.id,
        ...(followed.unlisted > 0 && { fires: followed.unlisted }),
      });
    followed.unlisted = 0;
    if (makeUp !== undefined) await this.fire(followed, makeUp, true);
  }

  /** Claims one fire; when this instance has it, starts its run (or records why not). */
  private async fire(followed: Followed, at: number, madeUp: boolean): Promise<void> {
    const { schedule } = followed;
    if (!(await this.store.claim(schedule.id, at))) return;
    const state = (await this.store.states([schedule.id], Date.now())).get(schedule.id);
    if (state?.paused) return this.end(followed, at, 'skipped', null, 'paused', madeUp);
    if (schedule.overlap !== 'allow') {
      const previous = await this.store.lastRun(schedule.id);
      if (previous !== undefined && (await this.store.runGoing(previous))) {
        if (schedule.overlap === 'skip') return this.end(followed, at, 'skipped', null, `overlap: the previous run ${previous} has not ended`, madeUp);
        const limit = followed.endpoint.type.detached?.(followed.endpoint.typeConfig)?.maxQueued ?? 100;
        if (followed.held.length >= limit)
          return this.end(followed, at, 'failed', null, `queue full: ${limit} fires wait behind the previous run (max_queued)`, madeUp);
        followed.held.push(at);
        return;
      }
    }
    await this.startRun(followed, at, madeUp);
  }

  /** Held fires (`overlap: queue`) whose turn came: the oldest, once the schedule's previous run has ended. */
  private async releaseHeld(followed: Followed): Promise<void> {
    while (followed.held.length > 0) {
      const previous = await this.store.lastRun(followed.schedule.id);
      if (previous !== undefined && (await this.store.runGoing(previous))) return;
      await this.startRun(followed, followed.held.shift()!, false);
    }
  }

  /** The run of a fire: the endpoint called as the `as` user, as any call is (permissions, client_filter, queue). */
  private async callEndpoint(followed: Followed, at: number, madeUp: boolean): Promise<void> {
    const { schedule, endpoint } = followed;
    const user = await this.s.users.findByUsername(schedule.as);
    if (!user) return this.end(followed, at, 'failed', null, `as user ${schedule.as} does not exist`, madeUp);
    if (user.disabled) return this.end(followed, at, 'failed', null, `as user ${schedule.as} is disabled`, madeUp);
    const toolkit = this.s.registry.snapshot.get(endpoint.toolkit);
    const method = endpoint.methods.includes('POST') ? 'POST' : endpoint.methods[0]!;
    const payload = schedule.payload as Record<string, unknown>;
    const answer = await this.s.internalCalls.call({
      kind: toolkit?.kind ?? 'app',
      toolkit: endpoint.toolkit,
      path: endpoint.path,
      method,
      ...(method === 'GET' ? { query: Object.fromEntries(Object.entries(payload).map(([key, value]) => [key, String(value)])) } : { payload }),
      as: {
        authenticated: { caller: user, credential: { kind: 'schedule', id: schedule.id } },
        run: { actor: { kind: 'schedule', schedule: schedule.id, username: user.username } },
      },
      requestId: `schedule-${randomBytes(8).toString('hex')}`,
    });
    const { outcome, runId, reason } = outcomeOf(answer);
    return this.end(followed, at, outcome, runId, reason, madeUp);
  }

  /** A fire's run, its failure to start recorded rather than leaving the fire pending (the cause in the log only). */
  private async startRun(followed: Followed, at: number, madeUp: boolean): Promise<void> {
    try {
      await this.callEndpoint(followed, at, madeUp);
    } catch (err) {
      this.s.log.error('schedule fire could not start its run', { schedule: followed.schedule.id, err: describeDatabaseError(err) });
      await this.end(followed, at, 'failed', null, 'internal_error: the run could not be started (see the log)', madeUp);
    }
  }

  private async end(followed: Followed, at: number, outcome: FireOutcome, runId: string | null, reason: string | null, madeUp = false): Promise<void> {
    const event = outcome === 'failed' ? this.eventOf(followed, 'schedule.failed', at, reason) : undefined;
    await this.store.settle(followed.schedule.id, at, outcome, runId, reason, event);
    this.recorded(followed, at, outcome, runId, reason, madeUp);
  }

  /** The outbox write of a missed or failed fire, when notifications are configured. */
  private eventOf(followed: Followed, type: ScheduleFireEvent['type'], fireAt: number, reason: string | null): AlsoWrite | undefined {
    const write = this.s.fireEvents;
    if (!write) return undefined;
    const { schedule, endpoint } = followed;
    const method = endpoint.methods.includes('POST') ? 'POST' : endpoint.methods[0]!;
    return (trx) => write(trx, { type, schedule: schedule.id, toolkit: endpoint.toolkit, endpoint: endpoint.path, method, fireAt, reason, at: Date.now() });
  }

  /** A fire's outcome, counted and audited (`schedule_fire`, actor `schedule`), its failure logged. */
  private recorded(followed: Followed, at: number, outcome: FireOutcome, runId: string | null, reason: string | null, madeUp: boolean): void {
    const { schedule, endpoint } = followed;
    this.s.metrics.scheduleFire(schedule.id, outcome);
    const fields = { schedule: schedule.id, fire_at: new Date(at).toISOString(), outcome, ...(runId && { run_id: runId }), ...(reason && { reason }) };
    if (outcome === 'failed') this.s.log.warn('schedule fire failed', fields);
    else this.s.log.info('schedule fire', fields);
    void this.s.audit.record({
      actor: 'schedule',
      credential: schedule.id,
      action: 'schedule_fire',
      toolkit: endpoint.toolkit,
      endpoint: endpoint.path,
      status: outcome === 'started' ? 202 : null,
      code: outcome === 'failed' ? 'failed' : 'ok',
      details: {
        schedule: schedule.id,
        fire_at: new Date(at).toISOString(),
        outcome,
        run_id: runId,
        reason,
        ...(madeUp && { made_up: true }),
        as: schedule.as,
      },
    });
  }
}

import type { Knex } from 'knex';
import type { Database } from '../db/connect.js';
import { claimDue } from '../db/claims.js';
import { isUniqueViolation } from '../db/database-errors.js';

/** What became of a fire (docs/schedules.md, "Outcomes"); `pending` from its insert until then. */
export type FireOutcome = 'pending' | 'started' | 'skipped' | 'missed' | 'failed';

export interface FireRow {
  schedule_id: string;
  fire_at: number;
  outcome: FireOutcome;
  run_id: string | null;
  reason: string | null;
}

export interface ScheduleState {
  since: number;
  paused: boolean;
  changedBy: string | null;
  changedAt: number | null;
}

/** The most a reason column holds (014_schedules.ts). */
const REASON_MAX = 255;

const toFire = (row: Record<string, unknown>): FireRow => ({
  schedule_id: String(row.schedule_id),
  fire_at: Number(row.fire_at),
  outcome: String(row.outcome) as FireOutcome,
  run_id: row.run_id == null ? null : String(row.run_id),
  reason: row.reason == null ? null : String(row.reason),
});

/** Statuses of a run that has ended (runs never leave them): docs/runs.md. */
const ENDED = ['succeeded', 'failed', 'timed_out', 'cancelled', 'lost', 'rejected', 'expired'];

/** A write that goes into the same transaction as a fire's outcome. */
export type AlsoWrite = (trx: Knex.Transaction) => Promise<void>;

/** How soon a fire's claim looks again when another instance's claim holds its schedule's row (a few round trips). */
const HELD_RETRY_MS = 20;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The tables of db/migrations/014_schedules.ts. The exactly-once rule is `claim`: the INSERT of the fire's primary
 * key `(schedule_id, fire_at)`; a unique violation means another instance (or this one, earlier) has it.
 */
export class ScheduleStore {
  constructor(private readonly db: Database) {}

  /**
   * Inserts the fire; true when this call did (it is ours to fire), false when the row was there. The insert is
   * made in the claim of runs and deliveries (db/claims.ts): the schedule's state row is claimed skip-locked and
   * the fire's row (with `also`) inserted in that claim's transaction, so two instances claiming one schedule at
   * once never wait on each other's insert inside the database (on MariaDB a duplicate-key check would). The one
   * that finds the row held looks again shortly: the holder has committed its fire by then (its insert then fails
   * here) or rolled it back (then this one inserts it), so a fire is neither lost nor fired twice.
   */
  async claim(scheduleId: string, fireAt: number, outcome: FireOutcome = 'pending', reason: string | null = null, also?: AlsoWrite): Promise<boolean> {
    for (;;) {
      let claimed: unknown;
      try {
        claimed = await claimDue(this.db, {
          table: 'schedule_states',
          key: 'schedule_id',
          due: (query) => query.where({ schedule_id: scheduleId }),
          order: [{ column: 'schedule_id' }],
          columns: ['schedule_id'],
          candidates: 1,
          also: async (trx) => {
            await trx('schedule_fires').insert({
              schedule_id: scheduleId,
              fire_at: fireAt,
              outcome,
              run_id: null,
              reason: reason?.slice(0, REASON_MAX) ?? null,
              created_at: Date.now(),
            });
            if (also) await also(trx);
          },
        });
      } catch (err) {
        if (isUniqueViolation(err)) return false;
        throw err;
      }
      if (Array.isArray(claimed) && claimed.length > 0) return true;
      // Held by another instance's claim now, or no state row yet (a schedule this instance did not follow).
      if (!(await this.db('schedule_states').where({ schedule_id: scheduleId }).first('schedule_id'))) await this.states([scheduleId], Date.now());
      else await sleep(HELD_RETRY_MS);
    }
  }

  /** Records a claimed fire's end. */
  async settle(scheduleId: string, fireAt: number, outcome: FireOutcome, runId: string | null, reason: string | null, also?: AlsoWrite): Promise<void> {
    await this.within(also, (db) =>
      db('schedule_fires')
        .where({ schedule_id: scheduleId, fire_at: fireAt })
        .update({ outcome, run_id: runId, reason: reason?.slice(0, REASON_MAX) ?? null }),
    );
  }

  /** A write alone, or with `also` in the same transaction (a notification's outbox row: docs/notifications.md). */
  private async within(also: AlsoWrite | undefined, write: (db: Database | Knex.Transaction) => PromiseLike<unknown>): Promise<void> {
    if (!also) {
      await write(this.db);
      return;
    }
    await this.db.transaction(async (trx) => {
      await write(trx);
      await also(trx);
    });
  }

  /** The latest fire time recorded for each of the schedules (none: absent). */
  async latestFires(ids: readonly string[]): Promise<Map<string, number>> {
    const latest = new Map<string, number>();
    if (ids.length === 0) return latest;
    const rows = (await this.db('schedule_fires').whereIn('schedule_id', ids).groupBy('schedule_id').select('schedule_id').max({ at: 'fire_at' })) as Array<
      Record<string, unknown>
    >;
    for (const row of rows) latest.set(String(row.schedule_id), Number(row.at));
    return latest;
  }

  /** The last fire of each schedule (its time, outcome and run). */
  async lastFires(ids: readonly string[]): Promise<Map<string, FireRow>> {
    const latest = await this.latestFires(ids);
    const fires = new Map<string, FireRow>();
    for (const [id, at] of latest) {
      const row = (await this.db('schedule_fires').where({ schedule_id: id, fire_at: at }).first()) as Record<string, unknown> | undefined;
      if (row) fires.set(id, toFire(row));
    }
    return fires;
  }

  /** A schedule's fires, newest first, before `before` (a page's cursor). */
  async fires(scheduleId: string, limit: number, before?: number): Promise<FireRow[]> {
    const query = this.db('schedule_fires').where({ schedule_id: scheduleId });
    if (before !== undefined) query.andWhere('fire_at', '<', before);
    return ((await query.orderBy('fire_at', 'desc').limit(limit)) as Array<Record<string, unknown>>).map(toFire);
  }

  /** The states of the schedules, adding one (since now) for each seen for the first time by any instance. */
  async states(ids: readonly string[], now: number): Promise<Map<string, ScheduleState>> {
    const states = new Map<string, ScheduleState>();
    if (ids.length === 0) return states;
    const read = async () => {
      for (const row of (await this.db('schedule_states').whereIn('schedule_id', ids)) as Array<Record<string, unknown>>)
        states.set(String(row.schedule_id), {
          since: Number(row.since),
          paused: Boolean(row.paused),
          changedBy: row.changed_by == null ? null : String(row.changed_by),
          changedAt: row.changed_at == null ? null : Number(row.changed_at),
        });
    };
    await read();
    const unseen = ids.filter((id) => !states.has(id));
    if (unseen.length === 0) return states;
    for (const id of unseen) {
      try {
        await this.db('schedule_states').insert({ schedule_id: id, since: now, paused: false });
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
    }
    await read();
    return states;
  }

  /** Pauses or resumes a schedule; true when that changed it. */
  async setPaused(scheduleId: string, paused: boolean, by: string, now: number): Promise<boolean> {
    await this.states([scheduleId], now);
    const changed = await this.db('schedule_states')
      .where({ schedule_id: scheduleId, paused: !paused })
      .update({ paused, changed_by: by.slice(0, 255), changed_at: now });
    return Number(changed) > 0;
  }

  /** Whether a run is still going (not ended); a run that is gone (purged) has ended. */
  async runGoing(runId: string): Promise<boolean> {
    const row = (await this.db('runs').where({ id: runId }).first('status')) as { status?: string } | undefined;
    return row?.status !== undefined && !ENDED.includes(row.status);
  }

  /** The run of the schedule's last started fire, if any. */
  async lastRun(scheduleId: string): Promise<string | undefined> {
    const row = (await this.db('schedule_fires').where({ schedule_id: scheduleId, outcome: 'started' }).orderBy('fire_at', 'desc').first('run_id')) as
      { run_id?: string | null } | undefined;
    return row?.run_id ?? undefined;
  }
}

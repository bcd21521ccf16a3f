import type { CompiledEndpoint, CompiledSchedule } from '../toolkits/compiled-toolkit.js';
import { localTime, utcTime } from '../toolkits/schedule-times.js';
import type { ToolkitSnapshot } from '../toolkits/toolkit-resolution.js';
import type { FireRow, ScheduleStore } from './schedule-store.js';
import { Schedules } from './schedules.js';

/**
 * What `GET {base}/schedules`, its sub-routes and `tkgate schedules …` do (docs/schedules.md): the same commands,
 * given the live toolkits (the gateway's registry, or the CLI's compile of the directory) and the database.
 */

export interface ScheduleEntry {
  schedule: CompiledSchedule;
  endpoint: CompiledEndpoint;
}

export interface FireData {
  fire_at: string;
  outcome: string;
  run_id: string | null;
  reason: string | null;
}

export interface ScheduleData {
  id: string;
  toolkit: string;
  endpoint: string;
  name: string;
  cron: string;
  timezone: string;
  as: string;
  overlap: string;
  missed: string;
  next_fire_at: string | null;
  last_fire: Omit<FireData, 'reason'> | null;
  paused: boolean;
}

export const fireData = (row: FireRow): FireData => ({ fire_at: utcTime(row.fire_at), outcome: row.outcome, run_id: row.run_id, reason: row.reason });

/** The schedules of the live toolkits, sorted by id, for which `visible` holds. */
export function scheduleEntries(snapshot: ToolkitSnapshot, visible: (endpoint: CompiledEndpoint) => boolean = () => true): ScheduleEntry[] {
  return [...Schedules.of(snapshot).values()].filter((entry) => visible(entry.endpoint)).sort((a, b) => (a.schedule.id < b.schedule.id ? -1 : 1));
}

/** The schedules with their next fire, last fire and whether they are paused. */
export async function listSchedules(store: ScheduleStore, entries: readonly ScheduleEntry[], now = Date.now()): Promise<ScheduleData[]> {
  const ids = entries.map((entry) => entry.schedule.id);
  const [states, last] = await Promise.all([store.states(ids, now), store.lastFires(ids)]);
  return entries.map(({ schedule, endpoint }) => {
    const next = schedule.times.next(now);
    const fire = last.get(schedule.id);
    return {
      id: schedule.id,
      toolkit: endpoint.toolkit,
      endpoint: endpoint.path,
      name: schedule.name,
      cron: schedule.cron,
      timezone: schedule.timezone,
      as: schedule.as,
      overlap: schedule.overlap,
      missed: schedule.missed,
      next_fire_at: next === undefined ? null : utcTime(next),
      last_fire: fire ? { fire_at: utcTime(fire.fire_at), outcome: fire.outcome, run_id: fire.run_id } : null,
      paused: states.get(schedule.id)?.paused ?? false,
    };
  });
}

/** The most fires of a page, and the default. */
export const FIRES_MAX_LIMIT = 200;
export const FIRES_DEFAULT_LIMIT = 50;

/** A page of a schedule's fires, newest first; `next_cursor` is the last fire's time (ms) in base64url. */
export async function scheduleFires(
  store: ScheduleStore,
  id: string,
  limit: number,
  before?: number,
): Promise<{ fires: FireData[]; next_cursor: string | null }> {
  const rows = await store.fires(id, limit, before);
  const last = rows.length === limit ? rows.at(-1) : undefined;
  return { fires: rows.map(fireData), next_cursor: last ? Buffer.from(String(last.fire_at)).toString('base64url') : null };
}

/** A cursor of `scheduleFires` back to the time it names; undefined when it is not one. */
export function fireCursor(cursor: string): number | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  return /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}

/** The most fire times a preview lists. */
export const PREVIEW_MAX = 100;

/** The next `n` fire times after `from`, in UTC and in the schedule's zone. */
export function previewSchedule(schedule: CompiledSchedule, from: number, n: number): { fires: Array<{ utc: string; local: string }> } {
  return { fires: schedule.times.list(from, n).map((at) => ({ utc: utcTime(at), local: localTime(schedule.timezone, at) })) };
}

/** Records a pause or resume in the audit trail, as the caller's kind of actor (a request's, or the CLI's `cli`). */
export type PauseAudit = (action: 'schedule_pause' | 'schedule_resume', entry: ScheduleEntry, details: Record<string, unknown>) => Promise<void>;

/** Pauses or resumes a schedule (kept in the database, seen by every instance within a second) and audits it; false when it already was. */
export async function setSchedulePaused(store: ScheduleStore, entry: ScheduleEntry, paused: boolean, by: string, audit: PauseAudit): Promise<boolean> {
  const changed = await store.setPaused(entry.schedule.id, paused, by, Date.now());
  await audit(paused ? 'schedule_pause' : 'schedule_resume', entry, { schedule: entry.schedule.id, changed });
  return changed;
}

import { Cron } from 'croner';
import { nearest } from '../suggest.js';

/**
 * A schedule's fire times, computed in its time zone (docs/schedules.md, "Time zones and daylight saving"). croner parses the
 * expression and walks the calendar in the zone; the daylight-saving rules are ours, applied to what croner
 * finds:
 * - a local time that does not exist (spring forward) fires once, at the first instant after the gap: croner
 *   moves it by the gap's length instead (`30 2 * * *` on 2027-03-28 in Europe/Berlin: 03:30, ours 03:00), and
 *   gives several such times (`*\/20 2 * * *`) several instants; each becomes the gap's end, once;
 * - a local time that occurs twice (fall back) fires once, at its first occurrence: croner does so today; a
 *   second occurrence it gave would be dropped.
 */

/** The @ forms a schedule takes (croner knows more: `@yearly` and `@annually` are not in the contract). */
const AT_FORMS: Record<string, string> = { '@hourly': '0 * * * *', '@daily': '0 0 * * *', '@weekly': '0 0 * * 0', '@monthly': '0 0 1 * *' };

/** Why a cron expression is refused, and the closest valid form where one is obvious. */
export interface CronProblem {
  message: string;
  hint?: string;
}

/** The expression croner is given: an @ form spelt out. */
function expanded(cron: string): string {
  return AT_FORMS[cron.trim().toLowerCase()] ?? cron.trim();
}

/** Whether the expression is one a schedule takes: 5 fields, or 6 with seconds first, or an @ form. */
export function cronProblem(cron: string): CronProblem | undefined {
  const text = cron.trim();
  if (text.startsWith('@')) {
    if (AT_FORMS[text.toLowerCase()]) return undefined;
    const guess = nearest(text.toLowerCase(), Object.keys(AT_FORMS));
    return { message: `unknown form ${text} (${Object.keys(AT_FORMS).join(', ')})`, ...(guess && { hint: `did you mean ${guess}?` }) };
  }
  const fields = text.split(/\s+/).filter(Boolean);
  if (fields.length < 5 || fields.length > 6) {
    const hint =
      fields.length === 4
        ? `did you mean "${text} *"?`
        : fields.length === 7
          ? `did you mean "${fields.slice(0, 6).join(' ')}"? (no year field)`
          : 'minute hour day month weekday, e.g. "30 2 * * *"';
    return { message: `a cron expression has 5 fields, or 6 with seconds first (this has ${fields.length})`, hint };
  }
  try {
    new Cron(text, { paused: true, mode: '5-or-6-parts' });
    return undefined;
  } catch (err) {
    return { message: (err as Error).message.replace(/^CronPattern:\s*/, '') };
  }
}

const ZONES = (() => {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return [];
  }
})();

/** Whether the zone is an IANA name the runtime knows; with the nearest known name when it is not. */
export function zoneProblem(zone: string): CronProblem | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return undefined;
  } catch {
    const guess = nearest(zone, ZONES);
    return { message: `unknown time zone ${zone} (an IANA name such as Europe/Berlin)`, ...(guess && { hint: `did you mean ${guess}?` }) };
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's wall clock at an instant, as if it were UTC (epoch ms), to the second. */
function wallClock(zone: string, at: number): number {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(at)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
}

/** The zone's offset from UTC at an instant, in ms (Berlin in summer: +7 200 000). */
export function offsetAt(zone: string, at: number): number {
  const whole = at - (at % 1000);
  return wallClock(zone, whole) - whole;
}

/** The longest gap or fold of any zone (Lord Howe's is 30 min, most are 1 h; none is more than 2 h). */
const LONGEST_SHIFT_MS = 3 * 3_600_000;

/** The first instant (to the second) at or before `at` since which the zone's offset is what it is at `at` (`at` when it did not change in the last hours). */
function shiftStart(zone: string, at: number): number {
  const offset = offsetAt(zone, at);
  if (offsetAt(zone, at - LONGEST_SHIFT_MS) === offset) return at;
  let low = at - LONGEST_SHIFT_MS; // its offset differs: the shift lies between
  let high = at;
  while (high - low > 1000) {
    const middle = low + Math.floor((high - low) / 2000) * 1000;
    if (offsetAt(zone, middle) === offset) high = middle;
    else low = middle;
  }
  return high;
}

/** A schedule's expression and zone, checked: the fire times after any instant. */
export class FireTimes {
  private readonly cron: Cron;

  constructor(
    expression: string,
    readonly zone: string,
  ) {
    this.cron = new Cron(expanded(expression), { paused: true, timezone: zone, mode: '5-or-6-parts' });
  }

  /** The first fire time strictly after `after` (epoch ms), by our rules; undefined when there is none. */
  next(after: number): number | undefined {
    let cursor = after;
    // A handful of croner's times can fold into instants at or before `after` (a gap's end); never many.
    for (let step = 0; step < 10_000; step++) {
      const found = this.cron.nextRun(new Date(cursor));
      if (!found) return undefined;
      const at = found.getTime();
      cursor = at;
      const fire = this.ours(at);
      if (fire !== undefined && fire > after) return fire;
    }
    return undefined;
  }

  /** The next `n` fire times after `from` (epoch ms). */
  list(from: number, n: number): number[] {
    const fires: number[] = [];
    let cursor = from;
    while (fires.length < n) {
      const fire = this.next(cursor);
      if (fire === undefined) break;
      fires.push(fire);
      cursor = fire;
    }
    return fires;
  }

  /** The fire time croner's `at` stands for: itself, the gap's end for a time in a gap, or none for a repeat. */
  private ours(at: number): number | undefined {
    if (!this.cron.match(new Date(at))) {
      // croner moved a local time that does not exist forward by the gap: it fires at the gap's end instead.
      return shiftStart(this.zone, at);
    }
    const back = offsetAt(this.zone, at - LONGEST_SHIFT_MS) - offsetAt(this.zone, at);
    // After a fall back, the same wall clock `back` earlier means this is the second occurrence.
    if (back > 0 && wallClock(this.zone, at - back) === wallClock(this.zone, at)) return undefined;
    return at;
  }
}

/** An instant as RFC 3339 in the zone's local time, with its offset (`2027-03-28T03:00:00+02:00`). */
export function localTime(zone: string, at: number): string {
  const offset = offsetAt(zone, at);
  const wall = new Date(at + offset).toISOString().slice(0, 19);
  const minutes = Math.abs(offset) / 60_000;
  const sign = offset < 0 ? '-' : '+';
  return `${wall}${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

/** An instant as RFC 3339 in UTC, to the second. */
export const utcTime = (at: number): string => new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');

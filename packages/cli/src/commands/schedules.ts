import {
  checkToolkitDirectory,
  createLogger,
  describeProblem,
  FIRES_DEFAULT_LIMIT,
  listSchedules,
  PREVIEW_MAX,
  previewSchedule,
  recordCliChange,
  scheduleEntries,
  scheduleFires,
  ScheduleStore,
  setSchedulePaused,
  type ScheduleEntry,
  type ServerConfig,
} from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command, OptionValues } from './command.js';
import { configFrom, withDatabase } from './context.js';

/**
 * `tkgate schedules …` (docs/schedules.md): the commands the routes call, on the toolkit files as they are
 * (compiled as `config check` does) and the configured database. The operator sees every schedule.
 */
async function liveEntries(config: ServerConfig): Promise<ScheduleEntry[]> {
  const log = createLogger('error', (line) => process.stderr.write(line + '\n'));
  const { snapshot, problems } = await checkToolkitDirectory(config.toolkits.dir, config, log);
  for (const problem of problems) process.stderr.write(describeProblem(problem) + '\n');
  return scheduleEntries(snapshot);
}

async function entryOf(values: OptionValues, id: string): Promise<ScheduleEntry> {
  const entry = (await liveEntries(configFrom(values))).find((each) => each.schedule.id === id);
  if (!entry) throw new Error(`no schedule ${id} in the toolkit files (tkgate schedules list shows them)`);
  return entry;
}

const json = (value: unknown) => process.stdout.write(JSON.stringify(value) + '\n');

export const schedulesList: Command = {
  name: 'schedules list',
  usage: 'schedules list [--json]',
  summary: "list the toolkit files' schedules: next fire, last fire and its outcome, paused (--json: one JSON object per line)",
  options: { json: { type: 'boolean' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const entries = await liveEntries(configFrom(values));
    const list = await withDatabase(values, (db) => listSchedules(new ScheduleStore(db), entries));
    for (const schedule of list) {
      if (values.json === true) json(schedule);
      else {
        const last = schedule.last_fire ? `${schedule.last_fire.fire_at} ${schedule.last_fire.outcome}` : '-';
        const line = [
          schedule.id,
          `"${schedule.cron}"`,
          schedule.timezone,
          `next ${schedule.next_fire_at ?? '-'}`,
          `last ${last}`,
          schedule.paused ? 'paused' : 'active',
        ];
        process.stdout.write(line.join('  ') + '\n');
      }
    }
  },
};

export const schedulesPreview: Command = {
  name: 'schedules preview',
  usage: 'schedules preview ID [--from RFC3339] [--n N]',
  summary: "list a schedule's next fire times (UTC and local) from now or from --from, by the daylight-saving rules",
  options: { from: { type: 'string' }, n: { type: 'string' } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const from = typeof values.from === 'string' ? Date.parse(values.from) : Date.now();
    if (Number.isNaN(from)) throw new UsageError('--from must be an RFC 3339 time, e.g. 2027-03-27T00:00:00Z');
    const n = typeof values.n === 'string' ? Number(values.n) : 10;
    if (!Number.isInteger(n) || n < 1 || n > PREVIEW_MAX) throw new UsageError(`--n must be a whole number from 1 to ${PREVIEW_MAX}`);
    const entry = await entryOf(values, id!);
    for (const fire of previewSchedule(entry.schedule, from, n).fires) process.stdout.write(`${fire.utc}  ${fire.local}\n`);
  },
};

export const schedulesFires: Command = {
  name: 'schedules fires',
  usage: 'schedules fires ID [--limit N] [--json]',
  summary: "list a schedule's fires, newest first: time, outcome, run, reason",
  options: { limit: { type: 'string' }, json: { type: 'boolean' } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const limit = typeof values.limit === 'string' ? Number(values.limit) : FIRES_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
    const entry = await entryOf(values, id!);
    const { fires } = await withDatabase(values, (db) => scheduleFires(new ScheduleStore(db), entry.schedule.id, limit));
    for (const fire of fires)
      if (values.json === true) json(fire);
      else process.stdout.write([fire.fire_at, fire.outcome.padEnd(7), fire.run_id ?? '-', fire.reason ?? ''].join('  ').trimEnd() + '\n');
  },
};

/** `schedules pause` and `resume`: kept in the database, audited with actor `cli`. */
function pauseCommand(paused: boolean): Command {
  const verb = paused ? 'pause' : 'resume';
  return {
    name: `schedules ${verb}`,
    usage: `schedules ${verb} ID`,
    summary: paused
      ? 'pause a schedule on every instance: its fires are recorded skipped (paused) and never made up'
      : 'resume a paused schedule from its next fire',
    options: {},
    operands: { min: 1, max: 1 },
    async run({ values, operands: [id] }) {
      const entry = await entryOf(values, id!);
      const changed = await withDatabase(values, (db) =>
        setSchedulePaused(new ScheduleStore(db), entry, paused, 'cli', (action, { endpoint }, details) =>
          recordCliChange(db, action, { ...details, toolkit: endpoint.toolkit, endpoint: endpoint.path }),
        ),
      );
      process.stdout.write(`schedule ${id}: ${changed ? (paused ? 'paused' : 'resumed') : `already ${paused ? 'paused' : 'active'}`}\n`);
    },
  };
}

export const schedulesPause = pauseCommand(true);
export const schedulesResume = pauseCommand(false);

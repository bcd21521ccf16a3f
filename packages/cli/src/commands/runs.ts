import { ENDED_RUN_STATUSES, recordCliChange, RUN_STATUSES, RunStore, runData, type RunRow } from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { withDatabase } from './context.js';

/** How often `runs output --follow` reads new output. */
const FOLLOW_POLL_MS = 250;
const LIST_LIMIT = 200;

/** The operator on the server sees every run. */
const OPERATOR = { userId: -1, power: 0, adminPower: 0 };

const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());

/** One run as a line of the table: id, status, where, who, when, how it ended. */
function line(run: RunRow): string {
  const ending = run.exit_code !== null ? `exit ${run.exit_code}` : (run.signal ?? run.reason ?? '-');
  return [run.id, run.status.padEnd(9), `${run.toolkit}/${run.endpoint}`, run.username ?? '-', iso(run.queued_at), ending].join('  ');
}

async function found(store: RunStore, id: string): Promise<RunRow> {
  const run = await store.get(id);
  if (!run) throw new Error(`no run ${id}`);
  return run;
}

export const runsList: Command = {
  name: 'runs list',
  usage: 'runs list [--status S] [--toolkit T] [--json]',
  summary: 'list runs of async exec endpoints, newest first (--json: one JSON object per line)',
  options: { status: { type: 'string' }, toolkit: { type: 'string' }, json: { type: 'boolean' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const status = typeof values.status === 'string' ? values.status : undefined;
    if (status !== undefined && !(RUN_STATUSES as readonly string[]).includes(status))
      throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')}`);
    const toolkit = typeof values.toolkit === 'string' ? values.toolkit : undefined;
    const runs = await withDatabase(values, (db) => new RunStore(db).list(OPERATOR, { status, toolkit, limit: LIST_LIMIT }));
    for (const run of runs) process.stdout.write((values.json === true ? JSON.stringify(runData(run)) : line(run)) + '\n');
  },
};

export const runsShow: Command = {
  name: 'runs show',
  usage: 'runs show ID',
  summary: 'show one run as JSON (status, times, exit code, result, the payload fields kept)',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const run = await withDatabase(values, (db) => found(new RunStore(db), id!));
    process.stdout.write(JSON.stringify(runData(run), null, 2) + '\n');
  },
};

export const runsOutput: Command = {
  name: 'runs output',
  usage: 'runs output ID [--follow]',
  summary: "print a run's output (stdout and stderr as they came); --follow waits for more until the run ends",
  options: { follow: { type: 'boolean' } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    await withDatabase(values, async (db) => {
      const store = new RunStore(db);
      let last = 0;
      for (;;) {
        // The status first: a run's chunks are all stored before it is ended, so none is missed after its end.
        const run = await found(store, id!);
        for (const chunk of await store.chunksAfter(id!, last)) {
          process.stdout.write(chunk.data);
          last = chunk.seq;
        }
        if (values.follow !== true || ENDED_RUN_STATUSES.has(run.status)) return;
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
      }
    });
  },
};

export const runsCancel: Command = {
  name: 'runs cancel',
  usage: 'runs cancel ID',
  summary: 'cancel a run: a queued one ends at once, a running one gets SIGTERM (then SIGKILL) from the instance running it',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const status = await withDatabase(values, async (db) => {
      const store = new RunStore(db);
      const run = await found(store, id!);
      if (ENDED_RUN_STATUSES.has(run.status)) throw new Error(`run ${id} has ended (${run.status})`);
      const now = Date.now();
      const how = (await store.cancelWaiting(id!, 'cli', now)) ? 'cancelled' : (await store.requestCancel(id!, 'cli', now)) ? 'cancelling' : undefined;
      if (!how) {
        const again = await found(store, id!);
        if (ENDED_RUN_STATUSES.has(again.status)) throw new Error(`run ${id} has ended (${again.status})`);
      }
      await recordCliChange(db, 'run_cancel', { run_id: id, toolkit: run.toolkit, endpoint: run.endpoint });
      // A waiting run ends here; a running one ends on its instance, which records its end.
      if (how === 'cancelled') await recordCliChange(db, 'run_end', { run_id: id, status: 'cancelled', reason: 'cancelled_by' });
      return how ?? 'cancelling';
    });
    process.stdout.write(`run ${id}: ${status}\n`);
  },
};

/** `runs approve` and `runs reject`: an operator at the server decides as `cli` (one approver, whoever runs the command). */
function decision(decision: 'approve' | 'reject'): Command {
  return {
    name: `runs ${decision}`,
    usage: decision === 'approve' ? 'runs approve ID [--comment C]' : 'runs reject ID --comment C',
    summary:
      decision === 'approve'
        ? "approve a run awaiting approval as the operator (actor cli): the quorum's last approval queues it"
        : 'reject a run awaiting approval as the operator (actor cli): it ends rejected and never runs',
    options: { comment: { type: 'string' } },
    operands: { min: 1, max: 1 },
    async run({ values, operands: [id] }) {
      const comment = typeof values.comment === 'string' && values.comment !== '' ? values.comment : null;
      if (decision === 'reject' && comment === null) throw new UsageError('runs reject needs --comment saying why');
      if (comment !== null && comment.length > 1000) throw new UsageError('--comment must be at most 1000 characters');
      const status = await withDatabase(values, async (db) => {
        const store = new RunStore(db);
        const run = await found(store, id!);
        if (run.status !== 'awaiting_approval' || (run.expires_at !== null && run.expires_at <= Date.now()))
          throw new Error(`run ${id} is not awaiting approval (${run.status})`);
        const outcome = await store.decide(id!, { key: 'cli', userId: null, username: 'cli' }, decision, comment, Date.now());
        if (outcome === 'already_decided') throw new Error(`run ${id}: the operator has decided on it already`);
        if (outcome === 'not_pending') throw new Error(`run ${id} is not awaiting approval (${(await found(store, id!)).status})`);
        await recordCliChange(db, `run_${decision}`, { run_id: id, toolkit: run.toolkit, endpoint: run.endpoint, ...(comment !== null && { comment }) });
        if (outcome === 'rejected') await recordCliChange(db, 'run_end', { run_id: id, status: 'rejected' });
        return outcome === 'recorded' ? 'approved, waiting for more approvals' : outcome;
      });
      process.stdout.write(`run ${id}: ${status}\n`);
    },
  };
}

export const runsApprove = decision('approve');
export const runsReject = decision('reject');

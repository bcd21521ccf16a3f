import { randomBytes } from 'node:crypto';
import {
  commentProblem,
  createLogger,
  ENDED_RUN_STATUSES,
  GatewayError,
  migrateToLatest,
  offlineRunCommands,
  RUN_OPERATOR,
  RUN_STATUSES,
  RunStore,
  rerunAsked,
  runData,
  startGateway,
  withLoadedToolkits,
  type RunRow,
} from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { configFrom, withDatabase } from './context.js';

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

/** A command's refusal (run_ended, run_not_pending, already_decided) as the CLI says it: `run ID: message`. */
async function asOperator<T>(id: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof GatewayError) throw new Error(`run ${id}: ${err.message}`, { cause: err });
    throw err;
  }
}

export const runsCancel: Command = {
  name: 'runs cancel',
  usage: 'runs cancel ID',
  summary: 'cancel a run: a queued one ends at once, a running one gets SIGTERM (then SIGKILL) from the instance running it',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const how = await withDatabase(values, async (db, config) => {
      const { store, commands } = offlineRunCommands(db, config);
      const run = await found(store, id!);
      return (await asOperator(id!, () => commands.cancel(run, RUN_OPERATOR))).how;
    });
    process.stdout.write(`run ${id}: ${how}\n`);
  },
};

/**
 * `runs approve` and `runs reject`: an operator at the server decides as `cli` (one approver, whoever runs the
 * command), under the gateway's rules: the run must await approval still, within its `expires`, for the endpoint
 * definition it was asked for (read from toolkits.dir as the gateway loads it; a changed one ends the run expired).
 */
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
      const problem = commentProblem(comment, decision);
      if (problem) throw new UsageError(`--comment: ${problem.message}`);
      const config = configFrom(values);
      const log = createLogger('error', (line) => process.stderr.write(line + '\n'));
      const outcome = await withLoadedToolkits(config, log, async (snapshot, db) => {
        await migrateToLatest(db);
        const { store, commands } = offlineRunCommands(db, config, snapshot);
        const run = await found(store, id!);
        return (await asOperator(id!, () => commands.decide(run, { kind: 'operator' }, decision, comment, RUN_OPERATOR))).outcome;
      });
      process.stdout.write(`run ${id}: ${outcome === 'recorded' ? 'approved, waiting for more approvals' : outcome}\n`);
    },
  };
}

export const runsApprove = decision('approve');
export const runsReject = decision('reject');

/** `--payload JSON` and `--param NAME=VALUE` of `runs rerun`: the fields sent again (secret fields), params over JSON. */
function rerunPayload(values: Record<string, unknown>): Record<string, unknown> {
  let payload: Record<string, unknown> = {};
  if (typeof values.payload === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(values.payload);
    } catch {
      throw new UsageError('--payload must be a JSON object, e.g. \'{"token": "…"}\'');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError('--payload must be a JSON object');
    payload = parsed as Record<string, unknown>;
  }
  const params = values.param;
  for (const text of Array.isArray(params) ? (params as string[]) : typeof params === 'string' ? [params] : []) {
    const at = text.indexOf('=');
    if (at < 1) throw new UsageError(`--param ${text.split('=')[0]}: give it as name=value`);
    payload[text.slice(0, at)] = text.slice(at + 1);
  }
  return payload;
}

/** A refused rerun call as the CLI says it: `run ID: rerun refused (400 invalid_payload): message [fields]`. */
function refusal(id: string, answer: { status: number; body: unknown }): Error {
  const error = (answer.body as { error?: { code?: string; message?: string; details?: unknown } } | undefined)?.error;
  // invalid_payload's details are its field problems: named, as the route's answer names them.
  const problems = Array.isArray(error?.details) ? (error.details as Array<{ field?: string; message?: string }>) : [];
  const fields = problems.length > 0 ? `: ${problems.map((problem) => `${problem.field} (${problem.message})`).join('; ')}` : '';
  return new Error(`run ${id}: rerun refused (${answer.status} ${error?.code ?? 'error'}): ${error?.message ?? 'no answer'}${fields}`);
}

/**
 * `runs rerun ID [--all]`: RunCommands.rerun, the route's command, as the operator (actor cli) through the
 * gateway's own request path, started here without claiming runs (an instance of the gateway runs the new run):
 * the endpoint is called again as the run's own user, so its permission, its payload rules (a secret field missing
 * is refused naming it), its approval (asked again) and its queue hold as for any call.
 */
export const runsRerun: Command = {
  name: 'runs rerun',
  usage: 'runs rerun ID [--all] [--payload JSON] [--param NAME=VALUE]...',
  summary:
    "rerun a fleet run's failed, timed-out, cancelled and skipped nodes (--all: every node) as a new run (actor cli); " +
    'secret fields are sent again with --payload or --param',
  options: { all: { type: 'boolean' }, payload: { type: 'string' }, param: { type: 'string', multiple: true } },
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const asked = asOperatorInput(() =>
      rerunAsked({ nodes: values.all === true ? 'all' : 'failed', payload: rerunPayload(values as Record<string, unknown>) }),
    );
    // The request path only: nothing listens where the gateway does, nothing is measured, no file is watched.
    const config = configFrom(values, {
      'server.host': '127.0.0.1',
      'server.port': 0,
      'server.shutdown_delay': '0s',
      'server.workers': 1,
      'metrics.enabled': false,
      'toolkits.watch': false,
    });
    const log = createLogger('error', (line) => process.stderr.write(line + '\n'));
    const gateway = await startGateway(config, log, { offline: true });
    try {
      const run = await found(gateway.runs.store, id!);
      const user = run.user_id === null ? undefined : await gateway.users.findCaller(run.user_id);
      if (!user || user.disabled)
        throw new Error(`run ${id}: its user ${run.username ?? '-'} ${user ? 'is disabled' : 'no longer exists'}: a rerun calls as that user`);
      const answer = await gateway.runs.commands
        .rerun(run, asked, {
          authenticated: { caller: user, credential: { kind: 'cli', id: 'cli' } },
          actor: { kind: 'cli' },
          requestId: `cli-${randomBytes(8).toString('hex')}`,
        })
        .catch((err: unknown) => {
          // The route's 409 as the CLI says it: its message, code and reason.
          if (!(err instanceof GatewayError)) throw err;
          const reason = (err.details as { reason?: string } | undefined)?.reason;
          throw new Error(`run ${id}: ${err.message} (${err.code}${reason ? `: ${reason}` : ''})`, { cause: err });
        });
      if (answer.status !== 202) throw refusal(id!, answer);
      const data = (answer.body as { data: { run_id: string; status: string } }).data;
      process.stdout.write(`run ${data.run_id}: ${data.status} (rerun of ${id}, ${asked.nodes === 'all' ? 'every node' : 'its failed nodes'})\n`);
    } finally {
      await gateway.stop();
    }
  },
};

/** A rerun's flags checked as the route checks its body: a UsageError naming the field. */
function asOperatorInput<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof GatewayError) throw new UsageError(err.message, { cause: err });
    throw err;
  }
}

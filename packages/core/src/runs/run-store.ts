import { insertRunNodes } from './run-nodes.js';
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { claimPurge, purgeIntervalMs } from '../audit/audit-retention.js';
import { claimDue, FULL, HELD } from '../db/claims.js';
import type { Database } from '../db/connect.js';
import { lockRow, writeTransaction } from '../db/write-transaction.js';
import { KeyedBatches } from './run-intake.js';
import { ENDED_STATUSES, RUN_COLUMNS, toRunRow, type RunDecision, type RunReason, type RunRow, type RunStatus } from './run-record.js';

/** What a claim answers when its queue's every place is taken (max_concurrency runs running, on any instance), or another instance claims it now. */
export { FULL, HELD };

/**
 * What else a state change writes, in its transaction (run-transitions.ts): called only when the change was made,
 * so its rows commit with the change or not at all.
 */
export type AlsoWrite = (trx: Knex.Transaction) => Promise<void>;

export interface NewRun {
  id: string;
  toolkit: string;
  endpoint: string;
  method: string;
  concurrencyKey: string | null;
  userId: number;
  username: string;
  actor: string;
  actorDetails: Readonly<Record<string, unknown>> | null;
  requestId: string;
  viewPower: number;
  cancelPower: number;
  payload: Record<string, unknown> | undefined;
  context: Record<string, unknown>;
  queuedAt: number;
  /** With an approval: the run waits (awaiting_approval) for these approvers, bound to this definition. */
  approval?: NewApproval;
  /** A run with nodes (run-nodes.ts): its selection, the run it reruns, and what a rerun of it calls again. */
  nodes?: RunWithNodes;
}

export interface RunWithNodes {
  names: readonly string[];
  rerunOf?: string;
  replay: { kind: string; path: string; payload: Record<string, unknown> };
}

export interface NewApproval {
  definitionHash: string;
  expiresAt: number;
  minPower: number | null;
  group: string | null;
  quorum: number;
  allowSelf: boolean;
  /** Whether a dry run runs now: its result is recorded by `recordDryRun`. */
  dryRun: boolean;
}

/** Who decides: `u:<id>` for a user, `cli` for an operator at the server. */
export interface Approver {
  key: string;
  userId: number | null;
  username: string;
}

/** What a decision did: recorded (more approvals needed), queued the run (the quorum's last), or rejected it. */
export type DecisionOutcome = 'recorded' | 'queued' | 'rejected' | 'not_pending' | 'already_decided';

/** A dry run's record: `running` until it ends. */
export interface DryRunRecord {
  status: 'running' | 'succeeded' | 'failed' | 'timed_out';
  exit_code: number | null;
  output: string;
}

/** A queued run an instance may start: which endpoint, to find its limits. */
export type QueuedRun = Pick<RunRow, 'id' | 'toolkit' | 'endpoint' | 'method' | 'queue' | 'concurrency_key'>;

/** A queue with runs waiting, and its endpoint. */
export type WaitingQueue = Pick<RunRow, 'queue' | 'toolkit' | 'endpoint' | 'method'>;

/** A run this instance has claimed, with the context it runs on (erased from the row by the claim). */
export interface ClaimedRun extends QueuedRun {
  context: Record<string, unknown>;
  request_id: string | null;
  user_id: number | null;
}

export interface RunEnd {
  status: RunStatus;
  exitCode?: number | null;
  signal?: string | null;
  reason?: RunReason | null;
  result?: string | null;
  outputBytes: number;
  outputTruncated: boolean;
  endedAt: number;
}

export interface OutputChunk {
  seq: number;
  /** `node`: a node's change (run-nodes.ts), its data the JSON of the SSE `node` event. */
  stream: 'stdout' | 'stderr' | 'node';
  data: string;
  /** The node of a run with nodes the chunk belongs to. */
  node?: string;
}

/** Who asks for runs: visibility is decided in the query, so a page holds only runs the caller may see. */
export interface Viewer {
  userId: number;
  power: number;
  adminPower: number;
  /** An API key's scope (null: every toolkit); undefined for a session. */
  scope?: ReadonlySet<string> | null;
  /** The viewer's core group: an approver of a run sees it. */
  group?: string | null;
}

export interface RunFilters {
  toolkit?: string;
  endpoint?: string;
  status?: string;
  username?: string;
  /** Only runs awaiting approval that the viewer may decide now. */
  approvable?: boolean;
  limit: number;
  cursor?: { queuedAt: number; id: string };
}

const CANDIDATES = 100;

/** Runs whose approvers the viewer is one of: power and group, each where the run names one. */
function approverOf(query: Knex.QueryBuilder, viewer: Viewer): Knex.QueryBuilder {
  query.whereNotNull('quorum').andWhere((power) => power.whereNull('approve_power').orWhere('approve_power', '<=', viewer.power));
  if (viewer.group) query.andWhere((group) => group.whereNull('approve_group').orWhere('approve_group', viewer.group!));
  else query.whereNull('approve_group');
  return query;
}

/**
 * Takes a lock row for the rest of the transaction, on every database (an UPDATE locks the row on MariaDB and
 * PostgreSQL; on SQLite the first write takes the database's write lock). The row is made on first use. A queue
 * has two: its claim lock (the queue's name), under which its running runs are counted and claimed by one instance
 * at a time, and its intake lock (`intakeLockOf`), under which its waiting runs are counted and new ones recorded.
 * They are apart because neither needs the other: a claim only lowers the count a submit makes, and a run recorded
 * meanwhile is claimed on the next look. Together, a burst of submits waited behind every claim's writes.
 */
async function lockQueue(trx: Knex.Transaction, lock: string, now: number): Promise<void> {
  if (Number(await trx('tkgate_run_queues').where({ queue: lock }).update({ claimed_at: now })) > 0) return;
  await trx('tkgate_run_queues').insert({ queue: lock, claimed_at: now }).onConflict('queue').ignore();
  await trx('tkgate_run_queues').where({ queue: lock }).update({ claimed_at: now });
}

/** A queue's intake lock: a row of tkgate_run_queues of its own, as wide as a queue's name. */
const intakeLockOf = (queue: string): string => createHash('sha256').update(`intake\0${queue}`).digest('hex');

/** Runs recorded in one statement at most: well under every database's limit of bound values per statement. */
const INTAKE_BATCH = 50;

/** A run asked for, and its queue's `max_queued`. */
interface Submission {
  run: NewRun;
  maxQueued: number;
  also?: AlsoWrite;
}

/** A new run's row. */
function runRow(run: NewRun, queue: string): Record<string, unknown> {
  const approval = run.approval;
  return {
    id: run.id,
    toolkit: run.toolkit,
    endpoint: run.endpoint,
    method: run.method,
    queue,
    concurrency_key: run.concurrencyKey,
    status: approval ? 'awaiting_approval' : 'queued',
    user_id: run.userId,
    username: run.username,
    actor: run.actor,
    actor_details: run.actorDetails ? JSON.stringify(run.actorDetails) : null,
    request_id: run.requestId,
    view_power: run.viewPower,
    cancel_power: run.cancelPower,
    queued_at: run.queuedAt,
    payload: run.payload ? JSON.stringify(run.payload) : null,
    context: JSON.stringify(run.context),
    ...(approval && {
      definition_hash: approval.definitionHash,
      expires_at: approval.expiresAt,
      approve_power: approval.minPower,
      approve_group: approval.group,
      quorum: approval.quorum,
      allow_self: approval.allowSelf,
      dry_run: approval.dryRun ? JSON.stringify({ status: 'running', exit_code: null, output: '' } satisfies DryRunRecord) : null,
    }),
    ...(run.nodes && { node_count: run.nodes.names.length, rerun_of: run.nodes.rerunOf ?? null, replay: JSON.stringify(run.nodes.replay) }),
  };
}

/** A queued run as a claim reads it: with what it needs to start. */
type WaitingRun = QueuedRun &
  Record<string, unknown> & { context: string | null; request_id: string | null; user_id: number | null; definition_hash: string | null };

/**
 * The waiting runs (oldest first) a claim starts: at most `free`, none whose concurrency key a running run holds,
 * and a key seen waiting keeps its younger runs waiting too (one key's runs start in order). A run approved for
 * another definition of the endpoint than this instance's is never started here (approvals/approval-binding.ts ends it expired).
 */
function startable(waiting: WaitingRun[], running: Array<{ concurrency_key: string | null }>, free: number, definitionHash?: string): WaitingRun[] {
  const busyKeys = new Set(running.map((row) => row.concurrency_key).filter((key) => key !== null));
  const chosen: WaitingRun[] = [];
  for (const run of waiting) {
    if (chosen.length >= free) break;
    if (run.definition_hash !== null && run.definition_hash !== definitionHash) continue;
    if (run.concurrency_key !== null && busyKeys.has(run.concurrency_key)) continue;
    if (run.concurrency_key !== null) busyKeys.add(run.concurrency_key);
    chosen.push(run);
  }
  return chosen;
}

/** A claimed run as the instance starts it: its context parsed (the claim erased it from the row). */
function claimedRun({ definition_hash: _bound, ...run }: WaitingRun): ClaimedRun {
  return {
    ...run,
    user_id: run.user_id === null ? null : Number(run.user_id),
    context: JSON.parse(run.context ?? '{}') as Record<string, unknown>,
  };
}

/** The database side of runs: every write is one conditional statement or a short transaction. */
export class RunStore {
  constructor(private readonly db: Database) {}

  /**
   * Submits of one queue on this instance are recorded in batches (KeyedBatches): a burst waits for the intake
   * lock a few times, not once per run, so no submit waits out db.timeout behind the others.
   */
  private readonly intake = new KeyedBatches<Submission, boolean>((queue, submissions) => this.record(queue, submissions), INTAKE_BATCH);

  /** Records a queued run in its queue (`queueOf` its endpoint), unless the queue already has `maxQueued` waiting: then false. */
  submit(queue: string, run: NewRun, maxQueued: number, also?: AlsoWrite): Promise<boolean> {
    return this.intake.add(queue, { run, maxQueued, ...(also && { also }) });
  }

  /** One batch of a queue's submits, oldest first, under its intake lock: each recorded while the queue has room. */
  private record(queue: string, submissions: Submission[]): Promise<boolean[]> {
    return writeTransaction(this.db, async (trx) => {
      await lockQueue(trx, intakeLockOf(queue), submissions[0]!.run.queuedAt);
      const row = await trx('runs').where({ queue }).whereIn('status', ['queued', 'awaiting_approval']).count({ n: '*' }).first();
      let waiting = Number(row?.n ?? 0);
      const recorded = submissions.map(({ maxQueued }) => {
        if (waiting >= maxQueued) return false;
        waiting++;
        return true;
      });
      const rows = submissions.filter((_, i) => recorded[i]).map(({ run }) => runRow(run, queue));
      if (rows.length > 0) await trx('runs').insert(rows);
      for (const [i, { also }] of submissions.entries()) if (recorded[i] && also) await also(trx);
      for (const [i, { run }] of submissions.entries()) if (recorded[i] && run.nodes) await insertRunNodes(trx, run.id, run.nodes.names);
      return recorded;
    });
  }

  async get(id: string): Promise<RunRow | undefined> {
    const row = await this.db('runs').where({ id }).first(RUN_COLUMNS);
    return row ? (await this.withDecisions([toRunRow(row)]))[0] : undefined;
  }

  /** The runs with their decisions (`approvals`): one read for the runs that have an approval, none for others. */
  private async withDecisions(runs: RunRow[]): Promise<RunRow[]> {
    const ids = runs.filter((run) => run.quorum !== null).map((run) => run.id);
    if (ids.length === 0) return runs;
    const rows = (await this.db('run_approvals')
      .whereIn('run_id', ids)
      .orderBy([{ column: 'decided_at' }, { column: 'approver' }])
      .select('run_id', 'username', 'decision', 'comment', 'decided_at')) as Array<Record<string, unknown>>;
    const byRun = new Map<string, RunDecision[]>();
    for (const row of rows) {
      const decisions = byRun.get(String(row.run_id)) ?? [];
      decisions.push({
        username: String(row.username),
        decision: row.decision as RunDecision['decision'],
        comment: row.comment === null ? null : String(row.comment),
        at: new Date(Number(row.decided_at)).toISOString(),
      });
      byRun.set(String(row.run_id), decisions);
    }
    return runs.map((run) => (run.quorum === null ? run : { ...run, approvals: byRun.get(run.id) ?? [] }));
  }

  /**
   * Records one approver's decision, under the run's row lock so that decisions on several instances at once are
   * counted one after another: a reject ends the run `rejected`; the approval that makes the quorum queues it,
   * exactly once (the count is made inside the lock, and (run_id, approver) is unique).
   */
  async decide(
    id: string,
    approver: Approver,
    decision: 'approve' | 'reject',
    comment: string | null,
    now: number,
    also?: (trx: Knex.Transaction, outcome: 'queued' | 'rejected') => Promise<void>,
  ): Promise<DecisionOutcome> {
    return writeTransaction(this.db, async (trx) => {
      const run = await lockRow(trx, 'runs', { id }, ['status', 'quorum']);
      if (!run || run.status !== 'awaiting_approval') return 'not_pending';
      if (await trx('run_approvals').where({ run_id: id, approver: approver.key }).first('decision')) return 'already_decided';
      await trx('run_approvals').insert({
        run_id: id,
        approver: approver.key,
        user_id: approver.userId,
        username: approver.username,
        decision,
        comment,
        decided_at: now,
      });
      if (decision === 'reject') {
        await trx('runs').where({ id, status: 'awaiting_approval' }).update({ status: 'rejected', ended_at: now, context: null });
        await also?.(trx, 'rejected');
        return 'rejected';
      }
      const approved = await trx('run_approvals').where({ run_id: id, decision: 'approve' }).count({ n: '*' }).first();
      if (Number(approved?.n ?? 0) < Number(run.quorum ?? 1)) return 'recorded';
      await trx('runs').where({ id, status: 'awaiting_approval' }).update({ status: 'queued' });
      await also?.(trx, 'queued');
      return 'queued';
    });
  }

  /** A dry run's end, while the run still waits (a decided run keeps what its approvers saw until then). */
  async recordDryRun(id: string, record: DryRunRecord): Promise<void> {
    await this.db('runs')
      .where({ id })
      .update({ dry_run: JSON.stringify(record) });
  }

  /** Runs awaiting approval past their deadline, for `expire`. */
  async overdue(now: number): Promise<Array<Pick<RunRow, 'id' | 'toolkit' | 'endpoint' | 'user_id'>>> {
    const rows = await this.db('runs')
      .where({ status: 'awaiting_approval' })
      .andWhere('expires_at', '<', now)
      .limit(CANDIDATES)
      .select('id', 'toolkit', 'endpoint', 'user_id');
    return rows.map((row) => ({ ...row, user_id: row.user_id === null ? null : Number(row.user_id) }));
  }

  /** Waiting runs bound to a definition (they had an approval): a changed definition ends them. */
  async bound(): Promise<Array<Pick<RunRow, 'id' | 'toolkit' | 'endpoint' | 'method' | 'definition_hash' | 'user_id'>>> {
    const rows = await this.db('runs')
      .whereIn('status', ['awaiting_approval', 'queued'])
      .whereNotNull('definition_hash')
      .limit(1000)
      .select('id', 'toolkit', 'endpoint', 'method', 'definition_hash', 'user_id');
    return rows.map((row) => ({ ...row, user_id: row.user_id === null ? null : Number(row.user_id) }));
  }

  /** How many runs await approval, across every instance (tkgate_runs_awaiting_approval). */
  async countAwaiting(): Promise<number> {
    const row = await this.db('runs').where({ status: 'awaiting_approval' }).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /**
   * The queues that have waiting runs, the one waiting longest first, with the endpoint each belongs to: one read,
   * what an instance looks at on every tick. By queue, not by run, so that a long queue never hides a short one.
   */
  async waitingQueues(): Promise<WaitingQueue[]> {
    return (await this.db('runs')
      .where({ status: 'queued' })
      .groupBy('queue', 'toolkit', 'endpoint', 'method')
      .select('queue', 'toolkit', 'endpoint', 'method')
      .min({ oldest: 'queued_at' })
      .orderBy('oldest')
      .limit(CANDIDATES)) as WaitingQueue[];
  }

  /** The ids of a queue's waiting runs. */
  async waitingIn(queue: string): Promise<string[]> {
    return (await this.db('runs').where({ queue, status: 'queued' }).limit(CANDIDATES).pluck('id')) as string[];
  }

  /**
   * Claims the queue's oldest runs that may start (db/claims.ts): while fewer than `maxConcurrency` run, the oldest
   * queued run whose concurrency key no running run holds. Under the queue's gate (one instance at a time counts
   * and claims a queue, so that `max_concurrency` holds across instances), in a fixed number of statements whatever
   * the number claimed; an instance that finds the gate held is told HELD at once rather than waiting behind it.
   * `room`: at most that many here (the endpoint type's own bound on this instance).
   * Resolves to the runs started here, FULL when every place of the queue was taken, HELD when another claims it now.
   */
  async claim(
    queue: string,
    maxConcurrency: number,
    instance: string,
    now: number,
    definitionHash?: string,
    room = Infinity,
    also?: (trx: Knex.Transaction, started: readonly ClaimedRun[]) => Promise<void>,
  ): Promise<ClaimedRun[] | typeof FULL | typeof HELD> {
    const claimed = await claimDue<WaitingRun>(this.db, {
      table: 'runs',
      key: 'id',
      due: (query) => query.where({ queue, status: 'queued' }),
      order: [{ column: 'queued_at' }, { column: 'id' }],
      columns: ['id', 'toolkit', 'endpoint', 'method', 'queue', 'concurrency_key', 'request_id', 'user_id', 'context', 'definition_hash'],
      candidates: CANDIDATES,
      lease: { status: 'running', instance, started_at: now, heartbeat_at: now, context: null },
      also: also && ((trx, started) => also(trx, started.map(claimedRun))),
      gate: {
        table: 'tkgate_run_queues',
        key: { queue },
        choose: async (trx, candidates) => {
          const running = (await trx('runs').where({ queue, status: 'running' }).select('concurrency_key')) as Array<{ concurrency_key: string | null }>;
          if (running.length >= maxConcurrency) return FULL;
          const free = Math.min(maxConcurrency - running.length, room);
          return free <= 0 ? [] : startable(await candidates(), running, free, definitionHash);
        },
      },
    });
    return claimed === FULL || claimed === HELD ? claimed : claimed.map(claimedRun);
  }

  /** Ends a waiting or running run; false when it had ended (or, with `instance`, runs elsewhere). */
  async end(id: string, from: readonly RunStatus[], end: RunEnd, instance?: string, also?: AlsoWrite): Promise<boolean> {
    return this.changeOne(also, async (db) => {
      const query = db('runs').where({ id }).whereIn('status', from);
      if (instance !== undefined) query.andWhere({ instance });
      return query.update({
        status: end.status,
        exit_code: end.exitCode ?? null,
        signal: end.signal ?? null,
        reason: end.reason ?? null,
        result: end.result ?? null,
        output_bytes: end.outputBytes,
        output_truncated: end.outputTruncated,
        ended_at: end.endedAt,
        context: null,
      });
    });
  }

  /**
   * One conditional statement that changes at most one row; with `also`, in a transaction with what `also` writes
   * (only when the row changed). Without it no transaction is opened: a gateway that writes nothing beside a run's
   * state change pays for none.
   */
  private async changeOne(also: AlsoWrite | undefined, statement: (db: Database | Knex.Transaction) => Promise<unknown>): Promise<boolean> {
    if (!also) return Number(await statement(this.db)) === 1;
    return writeTransaction(this.db, async (trx) => {
      const changed = Number(await statement(trx)) === 1;
      if (changed) await also(trx);
      return changed;
    });
  }

  /** Marks a running run as asked to stop; the instance running it sees the mark on its next tick. */
  async requestCancel(id: string, by: string, now: number): Promise<boolean> {
    const changed = await this.db('runs')
      .where({ id, status: 'running' })
      .whereNull('cancel_requested_at')
      .update({ cancel_requested_at: now, cancelled_by: by });
    return Number(changed) === 1;
  }

  /** Ends a waiting run `cancelled` at once. */
  async cancelWaiting(id: string, by: string, now: number, also?: AlsoWrite): Promise<boolean> {
    return this.changeOne(also, (db) =>
      db('runs')
        .where({ id })
        .whereIn('status', ['queued', 'awaiting_approval'])
        .update({ status: 'cancelled', reason: 'cancelled_by', cancelled_by: by, cancel_requested_at: now, ended_at: now, context: null }),
    );
  }

  /** The runs of this instance someone asked to cancel. */
  async cancelRequested(instance: string): Promise<Array<{ id: string; cancelled_by: string | null }>> {
    return this.db('runs').where({ instance, status: 'running' }).whereNotNull('cancel_requested_at').select('id', 'cancelled_by');
  }

  /** This instance's running runs are alive: their heartbeat and how much output they kept. */
  async heartbeat(id: string, now: number, outputBytes: number, outputTruncated: boolean): Promise<void> {
    await this.db('runs').where({ id, status: 'running' }).update({ heartbeat_at: now, output_bytes: outputBytes, output_truncated: outputTruncated });
  }

  /** Running runs whose heartbeat is older than `before`: their instance is gone. */
  async silent(before: number): Promise<Array<Pick<RunRow, 'id' | 'toolkit' | 'endpoint' | 'started_at' | 'instance'>>> {
    const rows = await this.db('runs')
      .where({ status: 'running' })
      .andWhere('heartbeat_at', '<', before)
      .select('id', 'toolkit', 'endpoint', 'started_at', 'instance');
    return rows.map((row) => ({ ...row, started_at: row.started_at === null ? null : Number(row.started_at) }));
  }

  /** Ends a silent run lost; false when it moved meanwhile (its heartbeat came, or another instance ended it). */
  async endLost(id: string, before: number, now: number, also?: AlsoWrite): Promise<boolean> {
    return this.changeOne(also, (db) =>
      db('runs').where({ id, status: 'running' }).andWhere('heartbeat_at', '<', before).update({ status: 'lost', reason: 'instance_lost', ended_at: now }),
    );
  }

  /** One batch of a run's chunks, in one statement; their text as UTF-8 bytes (migration 017: any character, NUL too). */
  async appendChunks(runId: string, chunks: readonly OutputChunk[]): Promise<void> {
    await this.db('run_output').insert(
      chunks.map((chunk) => ({ run_id: runId, seq: chunk.seq, stream: chunk.stream, data: Buffer.from(chunk.data, 'utf8'), node: chunk.node ?? null })),
    );
  }

  /** A run's chunks after `after`, in order. */
  async chunksAfter(runId: string, after: number): Promise<OutputChunk[]> {
    const rows = (await this.db('run_output')
      .where({ run_id: runId })
      .andWhere('seq', '>', after)
      .orderBy('seq')
      .select('seq', 'stream', 'data', 'node')) as Array<Record<string, unknown>>;
    return rows.map((row) => {
      // Bytes; a row SQLite kept from before migration 017 is text.
      const data = Buffer.isBuffer(row.data) ? row.data.toString('utf8') : String(row.data);
      const chunk: OutputChunk = { seq: Number(row.seq), stream: row.stream as OutputChunk['stream'], data };
      if (row.node !== null && row.node !== undefined) chunk.node = String(row.node);
      return chunk;
    });
  }

  /** A page of the runs the viewer may see, newest first. */
  async list(viewer: Viewer, filters: RunFilters): Promise<RunRow[]> {
    const query = this.db('runs').select(RUN_COLUMNS);
    if (viewer.scope) query.whereIn('toolkit', [...viewer.scope]);
    if (viewer.power < viewer.adminPower)
      query.andWhere((visible) =>
        visible
          .where('view_power', '<=', viewer.power)
          .orWhere('user_id', viewer.userId)
          .orWhere((approver) => approverOf(approver, viewer)),
      );
    if (filters.approvable) {
      query.andWhere('status', 'awaiting_approval').andWhere((approver) => approverOf(approver, viewer));
      query.andWhere((self) => self.where('allow_self', true).orWhereNot('user_id', viewer.userId));
      query.whereNotExists((decided) =>
        decided.select('run_id').from('run_approvals').whereRaw('run_approvals.run_id = runs.id').andWhere('approver', `u:${viewer.userId}`),
      );
    }
    if (filters.toolkit !== undefined) query.andWhere('toolkit', filters.toolkit);
    if (filters.endpoint !== undefined) query.andWhere('endpoint', filters.endpoint);
    if (filters.status !== undefined) query.andWhere('status', filters.status);
    if (filters.username !== undefined) query.andWhere('username', filters.username);
    const cursor = filters.cursor;
    if (cursor) {
      query.andWhere((older) =>
        older.where('queued_at', '<', cursor.queuedAt).orWhere((same) => same.where('queued_at', cursor.queuedAt).andWhere('id', '<', cursor.id)),
      );
    }
    const rows = await query
      .orderBy([
        { column: 'queued_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(filters.limit);
    return this.withDecisions(rows.map(toRunRow));
  }

  /** How many runs wait, across every instance (tkgate_runs_queued). */
  async countQueued(): Promise<number> {
    const row = await this.db('runs').where({ status: 'queued' }).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /**
   * Deletes ended runs ended more than `retentionMs` ago and their output, when this instance claims the due purge (the one
   * UPDATE that moves `tkgate_runs_purge.next_at` past now); undefined when it was not due here.
   */
  async purge(retentionMs: number, now: number): Promise<number | undefined> {
    if (!(await claimPurge(this.db, 'tkgate_runs_purge', now, purgeIntervalMs(retentionMs)))) return undefined;
    const before = now - retentionMs;
    let purged = 0;
    for (;;) {
      const ids = (await this.db('runs')
        .whereIn('status', [...ENDED_STATUSES])
        .andWhere('ended_at', '<', before)
        .limit(200)
        .pluck('id')) as string[];
      if (ids.length === 0) return purged;
      await this.db('run_output').whereIn('run_id', ids).delete();
      await this.db('run_nodes').whereIn('run_id', ids).delete();
      purged += Number(await this.db('runs').whereIn('id', ids).delete());
      if (ids.length < 200) return purged;
    }
  }
}

import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { claimPurge, purgeIntervalMs } from '../audit/audit-retention.js';
import type { Database } from '../db/connect.js';
import { writeTransaction } from '../db/write-transaction.js';
import { ENDED_STATUSES, RUN_COLUMNS, toRunRow, type RunReason, type RunRow, type RunStatus } from './run-record.js';

/** A queue's name: the endpoint's toolkit, path and method, hashed to a fixed width. */
export const queueOf = (toolkit: string, endpoint: string, method: string): string =>
  createHash('sha256').update(`${toolkit}\0${endpoint}\0${method}`).digest('hex');
/** A concurrency key's value, hashed: the value itself (a payload field) is never stored. */
export const keyOf = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('hex');

export interface NewRun {
  id: string;
  toolkit: string;
  endpoint: string;
  method: string;
  concurrencyKey: string | null;
  userId: number;
  username: string;
  actor: string;
  requestId: string;
  viewPower: number;
  cancelPower: number;
  payload: Record<string, unknown> | undefined;
  context: Record<string, unknown>;
  queuedAt: number;
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
  stream: 'stdout' | 'stderr';
  data: string;
}

/** Who asks for runs: visibility is decided in the query, so a page holds only runs the caller may see. */
export interface Viewer {
  userId: number;
  power: number;
  adminPower: number;
  /** An API key's scope (null: every toolkit); undefined for a session. */
  scope?: ReadonlySet<string> | null;
}

export interface RunFilters {
  toolkit?: string;
  endpoint?: string;
  status?: string;
  username?: string;
  limit: number;
  cursor?: { queuedAt: number; id: string };
}

const CANDIDATES = 100;

/**
 * Takes a queue's lock row for the rest of the transaction: runs of one queue are counted and claimed by one
 * instance at a time, on every database (an UPDATE locks the row on MariaDB and PostgreSQL; on SQLite the first
 * write takes the database's write lock). The row is made on first use.
 */
async function lockQueue(trx: Knex.Transaction, queue: string, now: number): Promise<void> {
  if (Number(await trx('tkgate_run_queues').where({ queue }).update({ claimed_at: now })) > 0) return;
  await trx('tkgate_run_queues').insert({ queue, claimed_at: now }).onConflict('queue').ignore();
  await trx('tkgate_run_queues').where({ queue }).update({ claimed_at: now });
}

/** The database side of runs: every write is one conditional statement or a short transaction. */
export class RunStore {
  constructor(private readonly db: Database) {}

  /** Records a queued run, unless its queue already has `maxQueued` waiting: then false. */
  async submit(run: NewRun, maxQueued: number): Promise<boolean> {
    const queue = queueOf(run.toolkit, run.endpoint, run.method);
    return writeTransaction(this.db, async (trx) => {
      await lockQueue(trx, queue, run.queuedAt);
      const row = await trx('runs').where({ queue, status: 'queued' }).count({ n: '*' }).first();
      if (Number(row?.n ?? 0) >= maxQueued) return false;
      await trx('runs').insert({
        id: run.id,
        toolkit: run.toolkit,
        endpoint: run.endpoint,
        method: run.method,
        queue,
        concurrency_key: run.concurrencyKey,
        status: 'queued',
        user_id: run.userId,
        username: run.username,
        actor: run.actor,
        request_id: run.requestId,
        view_power: run.viewPower,
        cancel_power: run.cancelPower,
        queued_at: run.queuedAt,
        payload: run.payload ? JSON.stringify(run.payload) : null,
        context: JSON.stringify(run.context),
      });
      return true;
    });
  }

  async get(id: string): Promise<RunRow | undefined> {
    const row = await this.db('runs').where({ id }).first(RUN_COLUMNS);
    return row ? toRunRow(row) : undefined;
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
   * Claims the queue's oldest runs that may start: while fewer than `maxConcurrency` run, the oldest queued run
   * whose concurrency key no running run holds. Under the queue's lock, each claim a conditional UPDATE
   * (`WHERE status = 'queued'`) whose changed row count says it was this instance's: a run starts exactly once.
   * `room`: at most that many here (the endpoint type's own bound on this instance).
   */
  async claim(queue: string, maxConcurrency: number, instance: string, now: number, room = Infinity): Promise<ClaimedRun[]> {
    return writeTransaction(this.db, async (trx) => {
      await lockQueue(trx, queue, now);
      const running = (await trx('runs').where({ queue, status: 'running' }).select('concurrency_key')) as Array<{ concurrency_key: string | null }>;
      let free = Math.min(maxConcurrency - running.length, room);
      if (free <= 0) return [];
      const busyKeys = new Set(running.map((row) => row.concurrency_key).filter((key) => key !== null));
      const waiting = (await trx('runs')
        .where({ queue, status: 'queued' })
        .orderBy([{ column: 'queued_at' }, { column: 'id' }])
        .limit(CANDIDATES)
        .select('id', 'toolkit', 'endpoint', 'method', 'queue', 'concurrency_key', 'request_id', 'user_id', 'context')) as Array<
        QueuedRun & { context: string | null; request_id: string | null; user_id: number | null }
      >;
      const claimed: ClaimedRun[] = [];
      for (const run of waiting) {
        if (free <= 0) break;
        if (run.concurrency_key !== null && busyKeys.has(run.concurrency_key)) continue;
        // A key seen waiting keeps its younger runs waiting too: one key's runs start in order.
        if (run.concurrency_key !== null) busyKeys.add(run.concurrency_key);
        const changed = await trx('runs')
          .where({ id: run.id, status: 'queued' })
          .update({ status: 'running', instance, started_at: now, heartbeat_at: now, context: null });
        if (Number(changed) !== 1) continue;
        free--;
        claimed.push({
          ...run,
          user_id: run.user_id === null ? null : Number(run.user_id),
          context: JSON.parse(run.context ?? '{}') as Record<string, unknown>,
        });
      }
      return claimed;
    });
  }

  /** Ends a waiting or running run; false when it had ended (or, with `instance`, runs elsewhere). */
  async end(id: string, from: readonly RunStatus[], end: RunEnd, instance?: string): Promise<boolean> {
    const query = this.db('runs').where({ id }).whereIn('status', from);
    if (instance !== undefined) query.andWhere({ instance });
    const changed = await query.update({
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
    return Number(changed) === 1;
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
  async cancelWaiting(id: string, by: string, now: number): Promise<boolean> {
    const changed = await this.db('runs')
      .where({ id })
      .whereIn('status', ['queued', 'awaiting_approval'])
      .update({ status: 'cancelled', reason: 'cancelled_by', cancelled_by: by, cancel_requested_at: now, ended_at: now, context: null });
    return Number(changed) === 1;
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
  async endLost(id: string, before: number, now: number): Promise<boolean> {
    const changed = await this.db('runs')
      .where({ id, status: 'running' })
      .andWhere('heartbeat_at', '<', before)
      .update({ status: 'lost', reason: 'instance_lost', ended_at: now });
    return Number(changed) === 1;
  }

  /** One batch of a run's chunks, in one statement. */
  async appendChunks(runId: string, chunks: readonly OutputChunk[]): Promise<void> {
    await this.db('run_output').insert(chunks.map((chunk) => ({ run_id: runId, seq: chunk.seq, stream: chunk.stream, data: chunk.data })));
  }

  /** A run's chunks after `after`, in order. */
  async chunksAfter(runId: string, after: number): Promise<OutputChunk[]> {
    const rows = (await this.db('run_output').where({ run_id: runId }).andWhere('seq', '>', after).orderBy('seq').select('seq', 'stream', 'data')) as Array<
      Record<string, unknown>
    >;
    return rows.map((row) => ({ seq: Number(row.seq), stream: row.stream as OutputChunk['stream'], data: String(row.data) }));
  }

  /** A page of the runs the viewer may see, newest first. */
  async list(viewer: Viewer, filters: RunFilters): Promise<RunRow[]> {
    const query = this.db('runs').select(RUN_COLUMNS);
    if (viewer.scope) query.whereIn('toolkit', [...viewer.scope]);
    if (viewer.power < viewer.adminPower) query.andWhere((visible) => visible.where('view_power', '<=', viewer.power).orWhere('user_id', viewer.userId));
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
    return rows.map(toRunRow);
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
      purged += Number(await this.db('runs').whereIn('id', ids).delete());
      if (ids.length < 200) return purged;
    }
  }
}

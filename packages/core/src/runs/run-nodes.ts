import type { Knex } from 'knex';
import type { Database } from '../db/connect.js';
import type { Logger } from '../log.js';
import type { InternalRunOptions } from '../auth/internal-calls.js';
import type { RunNodeState, RunNodeStatus } from '../plugins/plugin-api.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import type { RunWithNodes } from './run-store.js';

/** A run's node as `nodes` and `GET runs/{id}/nodes` answer it (docs/fleet.md, "The run"). */
export interface RunNodeAnswer {
  name: string;
  status: RunNodeStatus;
  exit_code: number | null;
  signal: string | null;
  reason: string | null;
  started_at: string | null;
  ended_at: string | null;
  output_bytes: number;
  output_truncated: boolean;
}

export type NodeCounts = Record<RunNodeStatus, number>;

export const NODE_STATUSES: readonly RunNodeStatus[] = ['pending', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'skipped'];
/** The nodes a rerun of `failed` takes: every node that did not succeed. */
export const RERUN_STATUSES: readonly RunNodeStatus[] = ['failed', 'timed_out', 'cancelled', 'skipped'];
/** How many nodes a run's own answer lists; past it, `nodes` is the first of them and `GET runs/{id}/nodes` pages the rest. */
export const NODES_IN_RUN = 1_000;
/** Rows per INSERT when a run's nodes are recorded (SQLite takes at most 32,766 bound values a statement). */
const INSERT_BATCH = 500;

const iso = (ms: unknown): string | null => (ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString());
const epoch = (text: string | null): number | null => (text === null ? null : Date.parse(text));

function answerOf(row: Record<string, unknown>): RunNodeAnswer {
  return {
    name: row.name as string,
    status: row.status as RunNodeStatus,
    exit_code: row.exit_code === null ? null : Number(row.exit_code),
    signal: (row.signal as string | null) ?? null,
    reason: (row.reason as string | null) ?? null,
    started_at: iso(row.started_at),
    ended_at: iso(row.ended_at),
    output_bytes: Number(row.output_bytes),
    output_truncated: row.output_truncated === true || Number(row.output_truncated) === 1,
  };
}

const COLUMNS = ['name', 'status', 'exit_code', 'signal', 'reason', 'started_at', 'ended_at', 'output_bytes', 'output_truncated'];

/** Records a new run's nodes, all pending, in the transaction that records the run. */
export async function insertRunNodes(trx: Knex.Transaction, runId: string, names: readonly string[]): Promise<void> {
  for (let at = 0; at < names.length; at += INSERT_BATCH) {
    await trx('run_nodes').insert(
      names
        .slice(at, at + INSERT_BATCH)
        .map((name, index) => ({ run_id: runId, name, position: at + index, status: 'pending', output_bytes: 0, output_truncated: false })),
    );
  }
}

export interface NodePage {
  status?: RunNodeStatus;
  limit: number;
  /** The last name of the previous page. */
  after?: string;
}

/**
 * The nodes of runs (`run_nodes`, 012_run_nodes.ts): their page by status and name (keyset paging on one index, so a
 * page of a 10,000-node run costs what a page of ten does), their counts, the names a rerun takes, and the changes
 * a running run reports.
 */
export class RunNodes {
  constructor(private readonly db: Database) {}

  async page(runId: string, page: NodePage): Promise<RunNodeAnswer[]> {
    let query = this.db('run_nodes').where({ run_id: runId });
    if (page.status) query = query.andWhere({ status: page.status });
    if (page.after !== undefined) query = query.andWhere('name', '>', page.after);
    const rows = (await query.orderBy('name').limit(page.limit).select(COLUMNS)) as Array<Record<string, unknown>>;
    return rows.map(answerOf);
  }

  async counts(runId: string): Promise<NodeCounts> {
    const counts = Object.fromEntries(NODE_STATUSES.map((status) => [status, 0])) as NodeCounts;
    const rows = (await this.db('run_nodes').where({ run_id: runId }).groupBy('status').select('status').count({ n: '*' })) as Array<{
      status: RunNodeStatus;
      n: number | string;
    }>;
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }

  /** The run's node names in the order they run, all or those with one of `statuses`. */
  async names(runId: string, statuses?: readonly RunNodeStatus[]): Promise<string[]> {
    let query = this.db('run_nodes').where({ run_id: runId });
    if (statuses) query = query.whereIn('status', statuses);
    return (await query.orderBy('position').pluck('name')) as string[];
  }

  /** Records nodes' latest states (one transaction for the batch). */
  async record(runId: string, states: ReadonlyArray<RunNodeState & { output_bytes: number; output_truncated: boolean }>): Promise<void> {
    await this.db.transaction(async (trx) => {
      for (const state of states) {
        await trx('run_nodes')
          .where({ run_id: runId, name: state.name })
          .update({
            status: state.status,
            exit_code: state.exit_code,
            signal: state.signal,
            reason: state.reason,
            started_at: epoch(state.started_at),
            ended_at: epoch(state.ended_at),
            output_bytes: state.output_bytes,
            output_truncated: state.output_truncated,
          });
      }
    });
  }

  /** Ends the nodes of a run that never reached them (a cancel before the run started, the run ended otherwise). */
  async endOpen(runId: string, status: RunNodeStatus, reason: string, now: number): Promise<void> {
    await this.db('run_nodes').where({ run_id: runId }).whereIn('status', ['pending', 'running']).update({ status, reason, ended_at: now });
  }

  /** What a rerun of a run with nodes calls again: its call's address and filtered payload (never its context). */
  async replay(runId: string): Promise<RunWithNodes['replay'] | undefined> {
    const row = (await this.db('runs').where({ id: runId }).first('replay')) as { replay: string | null } | undefined;
    return row?.replay ? (JSON.parse(row.replay) as RunWithNodes['replay']) : undefined;
  }
}

/**
 * A running run's node changes, stored in order: the changes that come while a batch is written are the next batch,
 * only each node's latest counting. `settled` waits for them all (before the run's end is recorded).
 */
export class NodeChangeWriter {
  private readonly waiting = new Map<string, RunNodeState & { output_bytes: number; output_truncated: boolean }>();
  private writing: Promise<void> | undefined;

  constructor(
    private readonly nodes: RunNodes,
    private readonly runId: string,
    private readonly log: Logger,
  ) {}

  change(state: RunNodeState & { output_bytes: number; output_truncated: boolean }): void {
    this.waiting.set(state.name, { ...state });
    this.writing ??= this.drain();
  }

  async settled(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    while (this.waiting.size > 0) {
      const batch = [...this.waiting.values()];
      this.waiting.clear();
      try {
        await this.nodes.record(this.runId, batch);
      } catch (err) {
        this.log.warn('run nodes not recorded', { run_id: this.runId, nodes: batch.length, error: (err as Error).message });
      }
    }
    this.writing = undefined;
  }
}

/** What a run of an endpoint whose type selects nodes records of them: the selection, and what a rerun calls again. */
export async function selectRunNodes(
  endpoint: CompiledEndpoint,
  call: { context: Record<string, unknown>; payload: Record<string, unknown>; address?: { kind: string; path: string }; rerun?: InternalRunOptions },
): Promise<RunWithNodes | undefined> {
  const select = endpoint.type.selectNodes;
  if (!select) return undefined;
  const only = call.rerun?.nodes;
  const names = await select({ config: endpoint.typeConfig, context: call.context, ...(only ? { only } : {}) });
  return {
    names,
    ...(call.rerun?.rerunOf !== undefined ? { rerunOf: call.rerun.rerunOf } : {}),
    // Secret fields (docs/toolkits.md) are kept nowhere, a rerun's replay included: a rerun sends them again.
    replay: { kind: call.address?.kind ?? '', path: call.address?.path ?? endpoint.path, payload: withoutSecretFields(call.payload, endpoint) },
  };
}

/** A payload without the endpoint's secret fields. */
function withoutSecretFields(payload: Record<string, unknown>, endpoint: CompiledEndpoint): Record<string, unknown> {
  const secret = endpoint.clientFilter.secretFields;
  if (!secret) return payload;
  return Object.fromEntries(Object.entries(payload).filter(([field]) => !secret.has(field)));
}

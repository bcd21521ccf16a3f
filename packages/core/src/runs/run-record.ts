/**
 * A run as the database keeps it (`runs`, 009_runs.ts) and as the API answers it. Times are epoch milliseconds
 * inside, ISO-8601 strings in answers.
 */
export type RunStatus = 'awaiting_approval' | 'queued' | 'running' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'lost' | 'rejected' | 'expired';

/** Statuses a run never leaves. */
export const ENDED_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'timed_out', 'cancelled', 'lost', 'rejected', 'expired']);
/** Statuses of a run that has not started yet: its context is kept, a cancel ends it at once. */
export const WAITING_STATUSES: ReadonlySet<string> = new Set(['awaiting_approval', 'queued']);
export const ALL_STATUSES: readonly RunStatus[] = [
  'awaiting_approval',
  'queued',
  'running',
  'succeeded',
  'failed',
  'timed_out',
  'cancelled',
  'lost',
  'rejected',
  'expired',
];

/** Why a run ended other than by its own exit. */
export type RunReason = 'timeout' | 'cancelled_by' | 'gateway_stopped' | 'instance_lost' | 'definition_changed' | 'approval_expired' | 'nodes_failed';

export interface RunRow {
  id: string;
  toolkit: string;
  endpoint: string;
  method: string;
  queue: string;
  concurrency_key: string | null;
  status: RunStatus;
  user_id: number | null;
  username: string | null;
  actor: string;
  /** JSON: the actor's details beyond user and kind (016_trigger_deliveries.ts), or null. */
  actor_details: string | null;
  request_id: string | null;
  view_power: number;
  cancel_power: number;
  queued_at: number;
  started_at: number | null;
  ended_at: number | null;
  heartbeat_at: number | null;
  instance: string | null;
  cancel_requested_at: number | null;
  cancelled_by: string | null;
  exit_code: number | null;
  signal: string | null;
  reason: string | null;
  output_bytes: number;
  output_truncated: boolean;
  result: string | null;
  payload: string | null;
  /** With an approval (010_run_approvals.ts): the endpoint's definition hash, the deadline, who decides, the dry run. */
  definition_hash: string | null;
  expires_at: number | null;
  approve_power: number | null;
  approve_group: string | null;
  quorum: number | null;
  allow_self: boolean;
  dry_run: string | null;
  /** A run with nodes (012_run_nodes.ts): how many, and the run it reruns; null for a run without nodes. */
  node_count: number | null;
  rerun_of: string | null;
  /** The decisions so far (run_approvals), oldest first; read with the run when it has an approval. */
  approvals?: RunDecision[];
}

/** One approver's decision, as `approvals` answers it. */
export interface RunDecision {
  username: string;
  decision: 'approve' | 'reject';
  comment: string | null;
  at: string;
}

/** The columns read for a run (never `context`: it is read only by the claim that starts the run). */
export const RUN_COLUMNS = [
  'id',
  'toolkit',
  'endpoint',
  'method',
  'queue',
  'concurrency_key',
  'status',
  'user_id',
  'username',
  'actor',
  'actor_details',
  'request_id',
  'view_power',
  'cancel_power',
  'queued_at',
  'started_at',
  'ended_at',
  'heartbeat_at',
  'instance',
  'cancel_requested_at',
  'cancelled_by',
  'exit_code',
  'signal',
  'reason',
  'output_bytes',
  'output_truncated',
  'result',
  'payload',
  'definition_hash',
  'expires_at',
  'approve_power',
  'approve_group',
  'quorum',
  'allow_self',
  'dry_run',
  'node_count',
  'rerun_of',
] as const;

const numberOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

/** A row as the drivers return it (MySQL's BIGINT as strings, booleans as 0/1) made typed. */
export function toRunRow(row: Record<string, unknown>): RunRow {
  return {
    ...(row as unknown as RunRow),
    user_id: numberOrNull(row.user_id),
    view_power: Number(row.view_power),
    cancel_power: Number(row.cancel_power),
    queued_at: Number(row.queued_at),
    started_at: numberOrNull(row.started_at),
    ended_at: numberOrNull(row.ended_at),
    heartbeat_at: numberOrNull(row.heartbeat_at),
    cancel_requested_at: numberOrNull(row.cancel_requested_at),
    exit_code: numberOrNull(row.exit_code),
    output_bytes: Number(row.output_bytes),
    output_truncated: row.output_truncated === true || Number(row.output_truncated) === 1,
    expires_at: numberOrNull(row.expires_at),
    approve_power: numberOrNull(row.approve_power),
    quorum: numberOrNull(row.quorum),
    allow_self: row.allow_self === true || Number(row.allow_self) === 1,
    node_count: numberOrNull(row.node_count),
    rerun_of: (row.rerun_of as string | null | undefined) ?? null,
  };
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const parsed = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

/** `GET {base}/runs/{id}`'s data. */
export function runData(run: RunRow): Record<string, unknown> {
  return {
    id: run.id,
    toolkit: run.toolkit,
    endpoint: run.endpoint,
    status: run.status,
    actor: { ...(parsed(run.actor_details) as object | null), user_id: run.user_id, username: run.username, kind: run.actor },
    queued_at: iso(run.queued_at),
    started_at: iso(run.started_at),
    ended_at: iso(run.ended_at),
    exit_code: run.exit_code,
    signal: run.signal,
    reason: run.reason,
    cancelled_by: run.cancelled_by,
    output_bytes: run.output_bytes,
    output_truncated: run.output_truncated,
    result: parsed(run.result),
    payload: parsed(run.payload) ?? {},
    approvals: run.approvals ?? [],
    approval:
      run.quorum === null
        ? null
        : {
            approvers: { min_power: run.approve_power, group: run.approve_group },
            quorum: run.quorum,
            allow_self: run.allow_self,
            expires_at: iso(run.expires_at),
          },
    dry_run: parsed(run.dry_run),
    ...(run.node_count !== null && { rerun_of: run.rerun_of }),
  };
}

/** A run's links, under server.base_url. */
export function runLinks(base: string, id: string): { self: string; output: string; cancel: string } {
  const self = `${base}/runs/${id}`;
  return { self, output: `${self}/output`, cancel: `${self}/cancel` };
}

import type { NodeOutcome, NodeReason, NodeStop } from '../ssh/node-session.js';

export type NodeStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'skipped';

/** A node of a run as the run shows it (docs/fleet.md, "Parallelism and failures"). */
export interface NodeState {
  name: string;
  status: NodeStatus;
  exit_code: number | null;
  signal: string | null;
  reason: NodeReason | null;
  started_at: string | null;
  ended_at: string | null;
  output_bytes: number;
  output_truncated: boolean;
}

export type NodeCounts = Record<NodeStatus, number>;

/** `max_failures`: a count, or a percentage of the selected nodes (rounded down) as `"10%"`. */
export type MaxFailures = number | `${number}%`;

export interface FleetExecution {
  /** Node names in the order they start. */
  nodes: readonly string[];
  /** Nodes running at once (`parallel`). */
  parallel: number;
  /** true: every node runs whatever failed; false: no node starts once more than `maxFailures` failed. */
  keepGoing: boolean;
  maxFailures: MaxFailures;
  /** Per node, from its start (`node_timeout`). */
  nodeTimeoutMs: number;
  /**
   * The run's stop: a cancel or the gateway stopping (reason `cancelled_by` unless the abort's reason is a
   * NodeStop), or the run's own timeout (abort with `{ status: 'timed_out', reason: 'timeout' }`).
   */
  signal: AbortSignal;
  /** Runs one node until it ends; `stop` aborts (with a NodeStop) when it must stop. */
  runNode(name: string, index: number, stop: AbortSignal): Promise<NodeOutcome>;
  /** Each change of a node's state (running, and its end), in order; never for the initial `pending`. */
  onNodeChange?(state: Readonly<NodeState>): void;
}

export interface FleetOutcome {
  nodes: NodeState[];
  counts: NodeCounts;
  /** `succeeded` when every node succeeded; else `failed`, or `timed_out` when the run's timeout stopped it. */
  status: 'succeeded' | 'failed' | 'timed_out';
  /** Why the run did not succeed: `nodes_failed`, or the stop's reason (`timeout`, `cancelled_by`). */
  reason?: string;
}

const CANCELLED: NodeStop = { status: 'cancelled', reason: 'cancelled_by' };

/** The failures a run tolerates before it stops starting nodes: a count, or a percentage of `selected` rounded down. */
export function failureBudget(maxFailures: MaxFailures, selected: number): number {
  if (typeof maxFailures === 'number') return maxFailures;
  return Math.floor((Number(maxFailures.slice(0, -1)) * selected) / 100);
}

export function countNodes(nodes: readonly NodeState[]): NodeCounts {
  const counts: NodeCounts = { pending: 0, running: 0, succeeded: 0, failed: 0, timed_out: 0, cancelled: 0, skipped: 0 };
  for (const node of nodes) counts[node.status]++;
  return counts;
}

/**
 * Runs a fleet run's nodes, at most `parallel` at once, in order (docs/fleet.md, "Parallelism and failures").
 * A node that failed or timed out counts as a failure; once failures pass the budget (and not `keepGoing`), no
 * further node starts: those end `skipped` (`max_failures`) while the running ones finish. At the run's stop,
 * running nodes get their stop and nodes not started end `cancelled` (or `skipped` with the run's timeout).
 * Knows nothing of SSH or of the run's store: nodes run through `runNode`, changes go out through
 * `onNodeChange`, and the outcome is returned.
 */
export async function executeFleet(execution: FleetExecution): Promise<FleetOutcome> {
  const states: NodeState[] = execution.nodes.map((name) => ({
    name,
    status: 'pending',
    exit_code: null,
    signal: null,
    reason: null,
    started_at: null,
    ended_at: null,
    output_bytes: 0,
    output_truncated: false,
  }));
  const budget = failureBudget(execution.maxFailures, states.length);
  let failures = 0;
  let next = 0;
  const change = (state: NodeState, update: Partial<NodeState>) => {
    Object.assign(state, update);
    execution.onNodeChange?.(state);
  };
  const runStop = (): NodeStop => {
    const reason = execution.signal.reason as Partial<NodeStop> | undefined;
    return reason && (reason.status === 'cancelled' || reason.status === 'timed_out') && typeof reason.reason === 'string' ? (reason as NodeStop) : CANCELLED;
  };
  /** Ends every node not started yet, at once, and starts no more. */
  const endRest = (update: Pick<NodeState, 'status' | 'reason'>) => {
    const endedAt = new Date().toISOString();
    for (; next < states.length; next++) change(states[next]!, { ...update, ended_at: endedAt });
  };
  const onRunStop = () => {
    const stop = runStop();
    endRest(stop.status === 'timed_out' ? { status: 'skipped', reason: stop.reason } : { status: 'cancelled', reason: stop.reason });
  };
  execution.signal.addEventListener('abort', onRunStop, { once: true });
  if (execution.signal.aborted) onRunStop();

  const worker = async () => {
    while (next < states.length) {
      const index = next++;
      const state = states[index]!;
      const stop = new AbortController();
      const stopNode = () => stop.abort(runStop());
      execution.signal.addEventListener('abort', stopNode, { once: true });
      const timer = setTimeout(() => stop.abort({ status: 'timed_out', reason: 'node_timeout' } satisfies NodeStop), execution.nodeTimeoutMs);
      change(state, { status: 'running', started_at: new Date().toISOString() });
      let outcome: NodeOutcome;
      try {
        outcome = await execution.runNode(state.name, index, stop.signal);
      } catch {
        outcome = { status: 'failed', reason: 'unreachable', outputBytes: 0, outputTruncated: false };
      } finally {
        clearTimeout(timer);
        execution.signal.removeEventListener('abort', stopNode);
      }
      if (outcome.status === 'failed' || outcome.status === 'timed_out') failures++;
      change(state, {
        status: outcome.status,
        exit_code: outcome.exitCode ?? null,
        signal: outcome.signal ?? null,
        reason: outcome.reason ?? null,
        ended_at: new Date().toISOString(),
        output_bytes: outcome.outputBytes,
        output_truncated: outcome.outputTruncated,
      });
      if (!execution.keepGoing && failures > budget) endRest({ status: 'skipped', reason: 'max_failures' });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(execution.parallel, states.length)) }, worker));
  execution.signal.removeEventListener('abort', onRunStop);

  const stopped = execution.signal.aborted ? runStop() : undefined;
  const counts = countNodes(states);
  if (stopped) return { nodes: states, counts, status: stopped.status === 'timed_out' ? 'timed_out' : 'failed', reason: stopped.reason };
  if (counts.succeeded === states.length) return { nodes: states, counts, status: 'succeeded' };
  return { nodes: states, counts, status: 'failed', reason: 'nodes_failed' };
}

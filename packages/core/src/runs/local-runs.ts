import type { ServerConfig } from '../config/server-config.js';
import { holdSecretValues } from '../parameters/index.js';
import type { SecretMask } from '../secrets/secret-mask.js';
import { describeDatabaseError } from '../db/database-errors.js';
import { scopedLogger, type Logger } from '../log.js';
import type { DetachedOutcome, DetachedPlan } from '../plugins/plugin-api.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import { BatchedChunkWriter, RunOutput } from './output/run-output.js';
import { NodeChangeWriter, type RunNodes } from './run-nodes.js';
import type { RunFeeds } from './output/run-feeds.js';
import { endOf, type StopCause } from './run-endings.js';
import type { ClaimedRun, RunStore, WaitingQueue } from './run-store.js';
import type { RunTransitions } from './run-transitions.js';
import { settleWithin } from './settle-within.js';

/** How long a stopped run has to end after SIGKILL before the stop goes on without it. */
const KILLED_WAIT_MS = 5_000;

/** A run going on here. */
interface LocalRun {
  id: string;
  toolkit: string;
  endpoint: string;
  /** Its queue: the place it frees at its end is looked at alone (RunQueue.freed). */
  queue: WaitingQueue;
  userId: number | null;
  startedAt: number;
  output: RunOutput;
  controller: AbortController;
  grace: number;
  /** Why core stopped it. */
  stopped?: StopCause;
  done: Promise<void>;
}

/**
 * The runs this instance claimed, each run to its end through its endpoint type's `runDetached` (exec's process,
 * an ssh fleet's nodes: core knows no type), with its output chunked, stored and fed to followers here
 * (output/). A cancel or the gateway's stop aborts the run's signal: SIGTERM now, SIGKILL after its grace.
 */
export class LocalRuns {
  private readonly local = new Map<string, LocalRun>();

  constructor(
    private readonly s: {
      config: ServerConfig;
      store: RunStore;
      transitions: RunTransitions;
      feeds: RunFeeds;
      log: Logger;
      instance: string;
      /** The nodes of runs with nodes (run-nodes.ts). */
      nodes: RunNodes;
      /** A place of this queue freed here. */
      freed(queue: WaitingQueue): void;
      /** The gateway's secret mask: a run's secret fields' values are held in it while it runs (parameters/). */
      mask: SecretMask;
      /** Output of a run of this instance was stored (other instances' followers are told). */
      stored?(id: string): void;
    },
  ) {}

  get size(): number {
    return this.local.size;
  }

  has(id: string): boolean {
    return this.local.has(id);
  }

  /** Runs a claimed run here, to its end. */
  run(claimed: ClaimedRun, endpoint: CompiledEndpoint, plan: DetachedPlan): void {
    // Its secret fields' values masked while it runs, also when the call came to another instance (docs/toolkits.md).
    const release = holdSecretValues(endpoint.clientFilter.secretFields, claimed.context.payload, this.s.mask);
    const feed = this.s.feeds.startLocal(claimed.id);
    const writer = new BatchedChunkWriter(
      async (chunks) => {
        await this.s.store.appendChunks(claimed.id, chunks);
        this.s.stored?.(claimed.id);
      },
      (chunks) => feed.stored(chunks),
      this.s.log,
    );
    // A type that selects nodes runs every run on nodes: their output is kept per node (run-nodes.ts).
    const withNodes = endpoint.type.selectNodes !== undefined;
    const output = new RunOutput(plan.maxOutputBytes, writer, withNodes);
    const local: LocalRun = {
      id: claimed.id,
      toolkit: claimed.toolkit,
      endpoint: claimed.endpoint,
      queue: { queue: claimed.queue, toolkit: claimed.toolkit, endpoint: claimed.endpoint, method: claimed.method },
      userId: claimed.user_id,
      startedAt: Date.now(),
      output,
      controller: new AbortController(),
      grace: this.s.config.runs.cancel_grace_ms,
      done: Promise.resolve(),
    };
    this.local.set(claimed.id, local);
    const log = scopedLogger(this.s.log, { plugin: endpoint.type.plugin, run_id: claimed.id, toolkit: claimed.toolkit, endpoint: claimed.endpoint });
    local.done = (async () => {
      let outcome: DetachedOutcome;
      const nodeChanges = withNodes ? new NodeChangeWriter(this.s.nodes, claimed.id, log) : undefined;
      try {
        const nodes = nodeChanges && (await this.s.nodes.names(claimed.id));
        outcome = await endpoint.type.runDetached!({
          ...(nodes && {
            nodes,
            nodeChanged: (state) => {
              const kept = output.nodeBytes(state.name);
              nodeChanges!.change({ ...state, output_bytes: kept.bytes, output_truncated: kept.truncated });
              output.nodeEvent(state.name, JSON.stringify({ node: state.name, status: state.status, exit_code: state.exit_code, reason: state.reason }));
            },
          }),
          config: endpoint.typeConfig,
          context: claimed.context,
          runId: claimed.id,
          requestId: claimed.request_id ?? '',
          endpoint: { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint },
          log,
          output,
          signal: local.controller.signal,
          graceMs: () => local.grace,
        });
      } catch (err) {
        log.error('run failed', { error: (err as Error).message });
        outcome = { status: 'failed' };
      }
      output.close();
      await writer.settled();
      if (nodeChanges) {
        await nodeChanges.settled();
        // Nodes the type left open (it failed, or stopped without a word on them) end with the run.
        const [status, reason] = local.stopped?.by === 'cancel' ? (['cancelled', 'cancelled_by'] as const) : (['failed', 'connection_lost'] as const);
        await this.s.nodes.endOpen(claimed.id, status, reason, Date.now()).catch(() => undefined);
      }
      await this.finish(local, outcome, feed);
    })().finally(release);
  }

  private async finish(local: LocalRun, outcome: DetachedOutcome, feed: ReturnType<RunFeeds['startLocal']>): Promise<void> {
    const end = endOf(outcome, local.stopped, local.output, Date.now());
    let recorded = false;
    try {
      const run = { id: local.id, toolkit: local.toolkit, endpoint: local.endpoint, userId: local.userId };
      recorded = await this.s.transitions.end(run, ['running'], end, { instance: this.s.instance, startedAt: local.startedAt });
    } catch (err) {
      this.s.log.error('run end not recorded', { run_id: local.id, ...describeDatabaseError(err) });
    }
    this.local.delete(local.id);
    if (!recorded) {
      // Ended elsewhere meanwhile (lost after a long pause of this instance): followers read what the database says.
      const row = await this.s.store.get(local.id).catch(() => undefined);
      feed.ended({ status: row?.status ?? 'lost', exit_code: row?.exit_code ?? null });
    }
    this.s.freed(local.queue);
  }

  /** Stops a run of this instance: SIGTERM now, SIGKILL after `graceMs`. False when it does not run here. */
  stop(id: string, stopped: StopCause, graceMs: number): boolean {
    const local = this.local.get(id);
    if (!local) return false;
    local.stopped ??= stopped;
    local.grace = graceMs;
    local.controller.abort(new Error(stopped.by === 'cancel' ? 'the run was cancelled' : 'the gateway is stopping'));
    return true;
  }

  /** The runs of this instance someone asked to cancel (on any instance, or the CLI): stopped within a tick. */
  async seeCancellations(): Promise<void> {
    for (const { id, cancelled_by } of await this.s.store.cancelRequested(this.s.instance)) {
      const local = this.local.get(id);
      if (local && !local.controller.signal.aborted) this.stop(id, { by: 'cancel', who: cancelled_by ?? '' }, this.s.config.runs.cancel_grace_ms);
    }
  }

  /** What the heartbeat records of each run here: its id and the output it kept. */
  *heartbeats(): Iterable<{ id: string; outputBytes: number; outputTruncated: boolean }> {
    for (const local of this.local.values()) yield { id: local.id, outputBytes: local.output.bytes, outputTruncated: local.output.truncated };
  }

  /**
   * The gateway stops: the runs here get runs.drain_timeout to end, then are killed and end failed
   * (gateway_stopped).
   */
  async drain(log: Logger): Promise<void> {
    if (this.local.size === 0) return;
    log.info('waiting for runs to end', { runs: this.local.size, drain_timeout_ms: this.s.config.runs.drain_timeout_ms });
    const all = () => Promise.all([...this.local.values()].map((local) => local.done));
    await settleWithin(all(), this.s.config.runs.drain_timeout_ms);
    for (const id of [...this.local.keys()]) this.stop(id, { by: 'gateway' }, 0);
    await settleWithin(all(), KILLED_WAIT_MS);
  }
}

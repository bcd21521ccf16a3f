import type { ToolkitRegistry } from '../toolkits/toolkit-registry.js';
import type { ToolkitSnapshot } from '../toolkits/toolkit-resolution.js';
import type { WakeupKind, Wakeups } from '../wakeups/wakeups.js';
import { queueOf } from './endpoint-plans.js';
import { FOLLOW_POLL_MS } from './output/run-feeds.js';
import type { WaitingQueue } from './run-store.js';

/** What a wake-up from another instance moves on this one (runs.ts, run-feeds.ts). */
export interface WokenRuns {
  woken(kind: 'queued' | 'freed' | 'cancel' | 'all', queue?: WaitingQueue): void;
  readonly feeds: { poke(id?: string): void };
}

/**
 * The runs' side of the wake-ups (wakeups/wakeups.ts, docs/runs.md "Claims and wake-ups"): what this instance tells
 * the others (a run queued, a place freed, a cancel asked, output stored) and what it does when told. A queue
 * travels as its name (a hash): it is found again among this instance's endpoints, and a name not found (a toolkit
 * this instance has not loaded yet) wakes a look at every queue.
 */
/** A queue's name no queue has: a look at every queue. */
const ANY_QUEUE = 'any';

export class RunWakeups {
  private queues: { snapshot: ToolkitSnapshot; byName: Map<string, WaitingQueue> } | undefined;
  private closed = false;

  constructor(
    private readonly wakeups: Wakeups | undefined,
    private readonly registry: ToolkitRegistry,
    runs: WokenRuns,
  ) {
    wakeups?.listen({
      wake: (kind, id) => {
        if (this.closed) return;
        if (kind === 'output') return runs.feeds.poke(id);
        if (kind === 'cancel') return runs.woken('cancel');
        const queue = this.queueNamed(id);
        runs.woken(queue ? kind : 'all', queue);
      },
      resumed: () => {
        if (this.closed) return;
        runs.woken('all');
        runs.feeds.poke();
      },
    });
  }

  /** How often a follower here reads a run running elsewhere: as before while wake-ups are down, else only as their fallback. */
  followPollMs(pollIntervalMs: number): number {
    return this.wakeups?.live() ? Math.max(pollIntervalMs, FOLLOW_POLL_MS) : FOLLOW_POLL_MS;
  }

  /** A run was queued in a queue (without one: in some queue, as an approval's quorum says). */
  queued(queue = ANY_QUEUE): void {
    this.tell('queued', queue);
  }

  freed(queue: string): void {
    this.tell('freed', queue);
  }

  cancelAsked(runId: string): void {
    this.tell('cancel', runId);
  }

  output(runId: string): void {
    this.tell('output', runId);
  }

  close(): void {
    this.closed = true;
  }

  private tell(kind: WakeupKind, id: string): void {
    if (!this.closed) this.wakeups?.tell(kind, id);
  }

  private queueNamed(name: string): WaitingQueue | undefined {
    const snapshot = this.registry.snapshot;
    if (this.queues?.snapshot !== snapshot) {
      const byName = new Map<string, WaitingQueue>();
      for (const toolkit of snapshot.values())
        for (const [path, methods] of toolkit.routes)
          for (const [method, endpoint] of methods) {
            const queue = queueOf(endpoint.toolkit, path, method);
            byName.set(queue, { queue, toolkit: endpoint.toolkit, endpoint: path, method });
          }
      this.queues = { snapshot, byName };
    }
    return this.queues.byName.get(name);
  }
}

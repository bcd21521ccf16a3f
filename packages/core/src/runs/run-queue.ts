import type { DetachedPlan } from '../plugins/plugin-api.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import { definitionHash } from './approvals/approval-binding.js';
import type { EndpointPlans } from './endpoint-plans.js';
import { FULL, HELD, type ClaimedRun, type RunStore, type WaitingQueue } from './run-store.js';
import type { RunTransitions } from './run-transitions.js';

/**
 * A claim: the queue's oldest startable runs, started on this instance, exactly once across instances (the store's
 * claim under the queue's lock, run-store.ts). One function, so that another way of claiming replaces it alone.
 */
export type ClaimRuns = (
  queue: string,
  plan: DetachedPlan,
  room: number,
  definitionHash: string | undefined,
) => Promise<ClaimedRun[] | typeof FULL | typeof HELD>;

/** How soon a queue whose gate another instance held is looked at again: that claim is a few round trips long. */
const HELD_RETRY_MS = 20;

/** The store's claim, through the one seam of state changes. */
export const storeClaim =
  (transitions: RunTransitions, instance: string): ClaimRuns =>
  (queue, plan, room, hash) =>
    transitions.claim({ queue, maxConcurrency: plan.maxConcurrency, instance, now: Date.now(), definitionHash: hash, room });

/**
 * Which queues this instance looks at, and its claims of their runs (docs/runs.md, "Several instances"). A look at
 * every queue reads the queues with waiting runs (the timer's tick, an approval's quorum, the start); otherwise only
 * the queues where a run was asked for or a place freed here are claimed.
 */
export class RunQueue {
  /**
   * The queues whose every place was taken at this instance's last claim of them (max_concurrency running, or no room
   * here). A run asked for in one of them cannot start before a place frees, so it wakes nobody: a place freed here
   * wakes this instance, one freed elsewhere wakes that instance, and the next tick looks anyway.
   */
  private readonly fullQueues = new Set<string>();
  /**
   * The queues to claim in the next look when no look at every queue is due: a run was asked for in one, or a run of
   * this instance ended in one. Reading every queue with waiting runs takes a time that grows with the runs waiting;
   * under a steady stream of async calls it was made once per call and per run's end, and took most of the instance's
   * CPU (docs/performance.md, "Async calls to a busy endpoint").
   */
  private readonly dueQueues = new Map<string, WaitingQueue>();
  /** Whether the next look reads every queue with waiting runs. */
  private everyQueueDue = true;
  /** Whether the last look at every queue found this instance without room: then a place freed here may serve any queue. */
  private roomLimited = false;

  constructor(
    private readonly s: {
      store: RunStore;
      transitions: RunTransitions;
      plans: EndpointPlans;
      claim: ClaimRuns;
      /** Starts a claimed run here. */
      start(run: ClaimedRun, endpoint: CompiledEndpoint, plan: DetachedPlan): void;
      /** Asks for a look now (or right after the one under way). */
      look(): void;
      draining(): boolean;
    },
  ) {}

  /** Looks at every queue now, else right after the look under way. */
  wake(): void {
    this.everyQueueDue = true;
    this.s.look();
  }

  /**
   * Looks at one queue now (a run was asked for in it): nothing when its every place was taken at the last look (the
   * run waits for a place, whose freeing wakes whoever frees it), every queue when this instance had no room (the
   * place freed here may serve any of them).
   */
  wakeFor(queue: WaitingQueue): void {
    if (this.roomLimited) return this.wake();
    if (this.fullQueues.has(queue.queue)) return;
    this.dueQueues.set(queue.queue, queue);
    this.s.look();
  }

  /** A place of the queue freed here: it is full no more. */
  freed(queue: WaitingQueue): void {
    this.fullQueues.delete(queue.queue);
    this.wakeFor(queue);
  }

  /** The queues with waiting runs, the longest-waiting first; each claimed under its lock. */
  async claimQueued(): Promise<void> {
    const everyQueue = this.everyQueueDue;
    const due = [...this.dueQueues.values()];
    this.everyQueueDue = false;
    this.dueQueues.clear();
    const queues = everyQueue ? await this.s.store.waitingQueues() : due;
    if (everyQueue) {
      // Found again below, queue by queue: a queue that emptied meanwhile is full no more.
      this.fullQueues.clear();
      this.roomLimited = false;
    }
    for (const queue of queues) {
      if (this.s.draining()) return;
      const endpoint = this.s.plans.endpointOf(queue);
      const plan = endpoint && this.s.plans.planOf(endpoint);
      if (!endpoint || !plan) {
        await this.endUnknown(queue);
        continue;
      }
      // The type's own bound here (exec: max_processes): a full instance leaves the queue to the others.
      const room = plan.room?.() ?? Infinity;
      if (room <= 0) {
        this.fullQueues.add(queue.queue);
        this.roomLimited = true;
        continue;
      }
      const claimed = await this.s.claim(queue.queue, plan, room, endpoint.approval ? definitionHash(endpoint) : undefined);
      // Another instance claims the queue now: looked at again shortly (a place it freed meanwhile may be missed by it).
      if (claimed === HELD) setTimeout(() => this.wakeFor(queue), HELD_RETRY_MS).unref();
      else if (claimed === FULL) this.fullQueues.add(queue.queue);
      else {
        this.fullQueues.delete(queue.queue);
        for (const run of claimed) this.s.start(run, endpoint, plan);
      }
    }
  }

  /** The queued runs of an endpoint that is gone, or runs as a job no more: they can never start. */
  private async endUnknown(queue: WaitingQueue): Promise<void> {
    const end = { status: 'failed' as const, reason: 'definition_changed' as const, outputBytes: 0, outputTruncated: false, endedAt: Date.now() };
    for (const id of await this.s.store.waitingIn(queue.queue))
      await this.s.transitions.end({ id, toolkit: queue.toolkit, endpoint: queue.endpoint, userId: null }, ['queued'], end);
  }
}

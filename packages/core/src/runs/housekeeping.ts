import { purgeIntervalMs } from '../audit/audit-retention.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Logger } from '../log.js';
import type { LocalRuns } from './local-runs.js';
import type { RunStore } from './run-store.js';
import type { RunTransitions } from './run-transitions.js';

/**
 * Runs' housekeeping on every instance (docs/runs.md): the heartbeat of the runs running here
 * (`runs.heartbeat`), the end of runs whose instance went silent for `runs.lost_after` (`lost`,
 * `instance_lost`, by whichever instance sees it first), and the purge of runs ended before `runs.retention`
 * (one instance at a time).
 */
export class RunHousekeeping {
  private lastHeartbeat = 0;
  private lastPurgeCheck = 0;

  constructor(private readonly s: { config: ServerConfig; store: RunStore; transitions: RunTransitions; local: LocalRuns; log: Logger }) {}

  /** Whether a heartbeat (and a look for silent runs) is due. */
  heartbeatDue(now: number): boolean {
    if (now - this.lastHeartbeat < this.s.config.runs.heartbeat_ms) return false;
    this.lastHeartbeat = now;
    return true;
  }

  /** Whether a purge may be due: as often as a tenth of runs.retention, at most hourly (the check is one read of one row). */
  purgeDue(now: number): boolean {
    if (now - this.lastPurgeCheck < purgeIntervalMs(this.s.config.runs.retention_ms)) return false;
    this.lastPurgeCheck = now;
    return true;
  }

  async heartbeat(now: number): Promise<void> {
    for (const run of this.s.local.heartbeats()) await this.s.store.heartbeat(run.id, now, run.outputBytes, run.outputTruncated);
  }

  /** Runs whose instance has not been heard of for runs.lost_after end lost, by whichever instance sees it first. */
  async endSilent(now: number): Promise<void> {
    const before = now - this.s.config.runs.lost_after_ms;
    for (const run of await this.s.store.silent(before)) {
      if (this.s.local.has(run.id)) continue;
      const ended = await this.s.transitions.endLost({ id: run.id, toolkit: run.toolkit, endpoint: run.endpoint, userId: null }, run.started_at, before, now);
      if (ended) this.s.log.warn('run lost: its instance stopped recording heartbeats', { run_id: run.id, instance: run.instance });
    }
  }

  async purge(now: number): Promise<void> {
    const purged = await this.s.store.purge(this.s.config.runs.retention_ms, now);
    if (purged !== undefined && purged > 0) this.s.log.info('runs purged', { purged });
  }
}

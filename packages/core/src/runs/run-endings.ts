import type { AuditTrail } from '../audit/audit-trail.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { DetachedOutcome } from '../plugins/plugin-api.js';
import type { RunFeeds } from './output/run-feeds.js';
import { ENDED_STATUSES, type RunReason, type RunStatus } from './run-record.js';
import type { RunEnd } from './run-store.js';
import type { RunTransition } from './run-transitions.js';

/** Why core stopped a run before its command ended: a cancel (by whom) or the gateway stopping. */
export type StopCause = { by: 'cancel'; who: string } | { by: 'gateway' };

/**
 * The largest `result` kept (its JSON, in bytes); a larger one is null, its text being the run's output anyway. The
 * result is written with the run's end in one statement and read with every view of the run: exec's result of a run
 * printing 32 MiB was its whole stdout, an UPDATE that MariaDB refused past `max_allowed_packet` (16 MiB by
 * default), so the end was never recorded and the run ended `lost` after runs.lost_after.
 */
export const MAX_RESULT_BYTES = 1024 * 1024;

/** A succeeded run's result as stored: its JSON, or null when it has none or it is larger than MAX_RESULT_BYTES. */
function storedResult(result: unknown): string | null {
  if (result === undefined) return null;
  const json = JSON.stringify(result);
  return json.length <= MAX_RESULT_BYTES && Buffer.byteLength(json) <= MAX_RESULT_BYTES ? json : null;
}

/**
 * A run's end as its command's outcome says it, unless core stopped it: a cancel ends it `cancelled`
 * (`cancelled_by`), the gateway's stop `failed` (`gateway_stopped`), a timeout `timed_out` (`timeout`).
 * `result` is kept only for a run that succeeded, up to MAX_RESULT_BYTES.
 */
export function endOf(outcome: DetachedOutcome, stopped: StopCause | undefined, output: { bytes: number; truncated: boolean }, endedAt: number): RunEnd {
  let status: RunStatus = outcome.status;
  let reason: RunReason | null = outcome.status === 'timed_out' ? 'timeout' : (outcome.reason ?? null);
  if (stopped?.by === 'cancel') [status, reason] = ['cancelled', 'cancelled_by'];
  else if (stopped?.by === 'gateway') [status, reason] = ['failed', 'gateway_stopped'];
  return {
    status,
    reason,
    exitCode: outcome.exitCode ?? null,
    signal: outcome.signal ?? null,
    result: status === 'succeeded' ? storedResult(outcome.result) : null,
    outputBytes: output.bytes,
    outputTruncated: output.truncated,
    endedAt,
  };
}

/**
 * What a run's end does, whoever ended it (its command, a cancel, a reject, an expiry, a silent instance): it is
 * recorded in the audit trail (`run_end`); on the gateway also counted (`tkgate_runs_total`), and the run's
 * followers on this instance hear `end` at once. A listener of run-transitions.ts.
 */
export function runEndings(s: {
  audit: Pick<AuditTrail, 'record'>;
  metrics?: GatewayMetrics;
  feeds?: RunFeeds;
  /** Whether the change waits for its run_end row (the CLI's database closes after the command; the gateway goes on). */
  waitForAudit?: boolean;
}): (transition: RunTransition) => Promise<void> | undefined {
  return ({ run, to, reason, exitCode = null, durationMs = null }) => {
    if (!ENDED_STATUSES.has(to)) return undefined;
    s.feeds?.ended(run.id, { status: to, exit_code: exitCode });
    s.metrics?.runEnded(run.toolkit, run.endpoint, to);
    const recorded = s.audit.record({
      actor: 'system',
      actorUserId: run.userId,
      action: 'run_end',
      toolkit: run.toolkit,
      endpoint: run.endpoint,
      status: null,
      code: to,
      durationMs,
      details: { run_id: run.id, status: to, exit_code: exitCode, ...(reason ? { reason } : {}), ...(durationMs !== null ? { duration_ms: durationMs } : {}) },
    });
    return s.waitForAudit ? recorded : undefined;
  };
}

import type { RunRow, RunStatus } from '../runs/run-record.js';

/** The event a run's new status is (docs/notifications.md, "Events"); failed, timed_out and lost are all run.failed. */
export const EVENT_OF_STATUS: Readonly<Record<RunStatus, string>> = {
  queued: 'run.queued',
  awaiting_approval: 'run.awaiting_approval',
  running: 'run.started',
  succeeded: 'run.succeeded',
  failed: 'run.failed',
  timed_out: 'run.failed',
  lost: 'run.failed',
  cancelled: 'run.cancelled',
  rejected: 'run.rejected',
  expired: 'run.expired',
};

/** Where a body's links point: `server.public_url` (absolute links) and `server.base_url`; the console's when it is served. */
export interface LinkBase {
  publicUrl: string;
  baseUrl: string;
  console: boolean;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * An event's body (docs/notifications.md, "The body"): the run as its status says, never its payload, result,
 * output or context, so no secret value and no secret parameter can be in it.
 */
export function runEventBody(type: string, run: RunRow, at: number, links: LinkBase): Record<string, unknown> {
  const origin = links.publicUrl.replace(/\/+$/, '');
  const runLink = `${origin}${links.baseUrl}/runs/${run.id}`;
  return {
    type,
    timestamp: new Date(at).toISOString(),
    data: {
      run: {
        id: run.id,
        toolkit: run.toolkit,
        endpoint: run.endpoint,
        status: run.status,
        reason: run.reason,
        exit_code: run.exit_code,
        actor: { user_id: run.user_id, username: run.username, kind: run.actor },
        queued_at: iso(run.queued_at),
        started_at: iso(run.started_at),
        ended_at: iso(run.ended_at),
      },
      links: {
        run: runLink,
        // The console's page of the run needs an address a browser can reach: only with server.public_url.
        ...(origin !== '' && links.console ? { console: `${origin}${links.baseUrl}/console/#/runs/${encodeURIComponent(run.id)}` } : {}),
      },
    },
  };
}

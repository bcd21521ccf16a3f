import { createHash } from 'node:crypto';
import type { AuditTrail } from '../../audit/audit-trail.js';
import type { CompiledEndpoint } from '../../toolkits/compiled-toolkit.js';
import type { ToolkitSnapshot } from '../../toolkits/toolkit-resolution.js';
import type { EndpointPlans } from '../endpoint-plans.js';
import type { RunRow, RunStatus } from '../run-record.js';
import type { NewApproval, RunStore } from '../run-store.js';
import type { RunTransitions } from '../run-transitions.js';

const hashes = new WeakMap<CompiledEndpoint, string>();

/** The SHA-256 of an endpoint's definition (its configuration as written): what an approval binds. */
export function definitionHash(endpoint: CompiledEndpoint): string {
  let hash = hashes.get(endpoint);
  if (hash === undefined) {
    hash = createHash('sha256').update(endpoint.definition).digest('hex');
    hashes.set(endpoint, hash);
  }
  return hash;
}

/**
 * What a new run of an endpoint with an approval binds (docs/runs.md, "Approvals"): the endpoint's definition
 * hash, its deadline, who decides and how many. The payload is bound by the run's stored context, which nothing
 * changes while it waits.
 */
export function approvalOf(endpoint: CompiledEndpoint, queuedAt: number): NewApproval | undefined {
  const approval = endpoint.approval;
  if (!approval) return undefined;
  return {
    definitionHash: definitionHash(endpoint),
    expiresAt: queuedAt + approval.expiresMs,
    minPower: approval.minPower,
    group: approval.group,
    quorum: approval.quorum,
    allowSelf: approval.allowSelf,
    dryRun: approval.dryRun !== undefined && endpoint.type.dryRun !== undefined,
  };
}

type WaitingRun = Pick<RunRow, 'id' | 'toolkit' | 'endpoint' | 'user_id'>;

/**
 * Whether an approval still holds: a run awaiting approval past its `expires`, or whose endpoint's definition is
 * no more the one it was asked for, ends `expired` (`approval_expired`, `definition_changed`) and is never
 * decided nor started. The gateway and the CLI both ask here.
 */
export class ApprovalBinding {
  /** The snapshot whose definitions the waiting runs were last checked against. */
  private boundChecked: ToolkitSnapshot | undefined;

  constructor(
    private readonly s: {
      store: RunStore;
      transitions: RunTransitions;
      plans: EndpointPlans;
      audit: Pick<AuditTrail, 'record'>;
    },
  ) {}

  /** Ends a waiting run expired: its approval ran out, or its endpoint's definition changed (`run_expire`, then `run_end`). */
  async expire(run: WaitingRun, reason: 'approval_expired' | 'definition_changed'): Promise<void> {
    const end = { status: 'expired' as const, reason, outputBytes: 0, outputTruncated: false, endedAt: Date.now() };
    // Past its deadline only while it awaits approval (an approval that came first wins); a changed definition also
    // stops an approved run that has not started.
    const from: RunStatus[] = reason === 'approval_expired' ? ['awaiting_approval'] : ['awaiting_approval', 'queued'];
    const audited = { id: run.id, toolkit: run.toolkit, endpoint: run.endpoint, userId: run.user_id };
    // run_expire before run_end, as the trail reads them.
    await this.s.transitions.end(audited, from, end, {
      first: () =>
        this.s.audit.record({
          actor: 'system',
          actorUserId: run.user_id,
          action: 'run_expire',
          toolkit: run.toolkit,
          endpoint: run.endpoint,
          status: null,
          code: reason,
          details: { run_id: run.id, reason },
        }),
    });
  }

  /**
   * Whether a run awaiting approval may still be decided: not past its `expires`, and its endpoint's definition
   * the one it was asked for here; otherwise it ends expired here and now.
   */
  async stillPending(run: RunRow): Promise<boolean> {
    if (run.status !== 'awaiting_approval') return true;
    if (run.expires_at !== null && run.expires_at <= Date.now()) {
      await this.expire(run, 'approval_expired');
      return false;
    }
    const endpoint = this.s.plans.endpointOf(run);
    if (run.definition_hash !== null && (!endpoint || definitionHash(endpoint) !== run.definition_hash)) {
      await this.expire(run, 'definition_changed');
      return false;
    }
    return true;
  }

  /** Runs awaiting approval past their `expires`, ended expired (approval_expired) by whichever instance sees them first. */
  async expireOverdue(now: number): Promise<void> {
    for (const run of await this.s.store.overdue(now)) await this.expire(run, 'approval_expired');
  }

  /** Whether the waiting runs were checked against this snapshot's definitions already. */
  checkedAgainst(snapshot: ToolkitSnapshot): boolean {
    return this.boundChecked === snapshot;
  }

  /**
   * After a reload (or at start), the waiting runs bound to a definition are checked against this instance's
   * endpoints: one whose endpoint changed or is gone never starts (expired, definition_changed).
   */
  async checkBound(snapshot: ToolkitSnapshot): Promise<void> {
    for (const run of await this.s.store.bound()) {
      const endpoint = this.s.plans.endpointOf(run, snapshot);
      if (!endpoint || definitionHash(endpoint) !== run.definition_hash) await this.expire(run, 'definition_changed');
    }
    this.boundChecked = snapshot;
  }
}

import { forbidden, invalidPayload, type FieldProblem } from '../../errors.js';
import type { CallerRecord } from '../../users/user-directory.js';
import type { RunRow } from '../run-record.js';
import type { Approver } from '../run-store.js';

/** The most a decision's comment holds, in characters. */
export const MAX_COMMENT = 1000;

/**
 * Who decides: a person signed in (the route; `session` false for an API key or a workload token, which never
 * decide), or the operator at the server (`tkgate runs approve|reject`, actor cli, one approver whoever runs it).
 */
export type Decider = { kind: 'person'; caller: CallerRecord; session: boolean } | { kind: 'operator' };

/** Whether the caller is one of a run's approvers: the power and the core group its endpoint's approval names. */
export function isApprover(caller: Pick<CallerRecord, 'power' | 'core_group_name'>, run: RunRow): boolean {
  if (run.quorum === null) return false;
  if (run.approve_power !== null && caller.power < run.approve_power) return false;
  return run.approve_group === null || caller.core_group_name === run.approve_group;
}

/** The approver a decision is recorded as (one decision each: `run_approvals` is unique per run and approver). */
export function approverOf(decider: Decider): Approver {
  if (decider.kind === 'operator') return { key: 'cli', userId: null, username: 'cli' };
  return { key: `u:${decider.caller.id}`, userId: decider.caller.id, username: decider.caller.username };
}

/** 403 unless the decider may decide this run: a person, one of its approvers, not its caller unless allow_self. */
export function checkDecider(decider: Decider, run: RunRow): void {
  if (decider.kind === 'operator') return;
  const { caller } = decider;
  if (!decider.session) throw forbidden('only a person signed in may approve or reject a run (not an API key or a workload token)');
  if (!isApprover(caller, run)) throw forbidden('you are not an approver of this run');
  if (run.user_id === caller.id && !run.allow_self) throw forbidden('you may not approve or reject your own run');
}

/** What is wrong with a decision's comment, if anything: a string of at most 1000 characters, required for a reject. */
export function commentProblem(comment: unknown, decision: 'approve' | 'reject'): FieldProblem | undefined {
  if (comment === undefined || comment === null || comment === '')
    return decision === 'reject' ? { field: 'comment', rule: 'required', message: 'a reject needs a comment saying why' } : undefined;
  if (typeof comment !== 'string') return { field: 'comment', rule: 'type', message: 'comment must be a string' };
  if (comment.length > MAX_COMMENT) return { field: 'comment', rule: 'max_length', message: `comment must be at most ${MAX_COMMENT} characters` };
  return undefined;
}

/** The decision's comment, or 400 invalid_payload naming `comment`. */
export function decisionComment(comment: unknown, decision: 'approve' | 'reject'): string | null {
  const problem = commentProblem(comment, decision);
  if (problem) throw invalidPayload([problem]);
  return comment === undefined || comment === null || comment === '' ? null : (comment as string);
}

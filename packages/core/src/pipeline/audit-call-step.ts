import { withOutcome } from '../audit/answer-outcome.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { AuditEvent } from '../audit/audit-event.js';
import type { Authenticated } from '../auth/authenticate.js';
import { unavailable } from '../errors.js';
import { clientAddress } from '../http/client-address.js';
import type { GatewayContext } from '../http/context.js';
import type { Stage } from '../http/stage.js';
import type { Next } from 'koa';
import { keptFields } from '../parameters/index.js';
import type { AuditDetailsCollected, ExecutingState, PayloadFiltered, TriggerCalled } from './pipeline-state.js';

export interface AuditCallServices {
  trail: AuditTrail;
  /** audit.required: a call whose event cannot be written is refused (503 unavailable) rather than run. */
  required: boolean;
  trustProxy: boolean;
}

type AuditingState = ExecutingState & Authenticated & PayloadFiltered & TriggerCalled;

/**
 * Just before step 9, for an audited endpoint (`audit`, docs/audit.md): the call's event is written, then the
 * endpoint runs, then the event is completed with the answer's status and code (`ok`), the time step 9 took and
 * what the plugin added (call.addAuditDetails: exec's exit_code). When the write fails, audit.required refuses
 * the call with 503 unavailable and step 9 never runs; otherwise the failure is logged and counted and the call
 * goes on. An endpoint that is not audited goes straight on: no promise, no allocation.
 */
export function auditCallStep(s: AuditCallServices): Stage<AuditingState, AuditDetailsCollected> {
  const audited = async (ctx: GatewayContext<AuditingState>, next: Next): Promise<void> => {
    const { endpoint, caller, credential, payload, requestId, jwt, trigger } = ctx.state;
    const listed = keptFields(payload, endpoint.auditFields, endpoint.clientFilter.secretFields);
    // A workload token's call says which platform identity made it (the subject is an identity, not a secret).
    // A signed call says which provider's scheme and which of its deliveries.
    const who = jwt ? { issuer: jwt.issuer, subject: jwt.subject } : trigger ? { trigger: trigger.scheme, delivery: trigger.delivery } : undefined;
    const details = listed || who ? { ...who, ...(listed ? { payload: listed } : {}) } : null;
    const event: AuditEvent = {
      requestId,
      actorUserId: caller.id,
      actor: credential.kind,
      credential: credential.id,
      client: clientAddress(ctx.req, s.trustProxy),
      action: 'call',
      toolkit: endpoint.toolkit,
      endpoint: endpoint.path,
      method: ctx.method,
      details,
    };
    let id: number | undefined;
    try {
      id = await s.trail.write(event);
    } catch (err) {
      s.trail.failed(err, event);
      if (s.required) throw unavailable(undefined, 'the audit trail cannot record this call, so it was not run; try again');
    }
    const added: Record<string, unknown> = {};
    (ctx.state as AuditingState & AuditDetailsCollected).auditDetails = added;
    await withOutcome(ctx, next, async (outcome) => {
      if (id === undefined) return;
      // The plugin's facts never replace core's (payload).
      const details = Object.keys(added).length > 0 ? { ...added, ...event.details } : undefined;
      await s.trail.complete(id, { ...outcome, details }, event);
    });
  };
  // Not async: an endpoint that is not audited goes on without a promise of its own.
  return (ctx, next) => (ctx.state.endpoint.audit ? audited(ctx, next) : next());
}

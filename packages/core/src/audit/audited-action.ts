import { clientAddress } from '../http/client-address.js';
import type { GatewayContext, GatewayMiddleware, GatewayState } from '../http/context.js';
import type { Credential } from '../sessions/credential.js';
import { withOutcome } from './answer-outcome.js';
import type { AuditActor } from './audit-event.js';
import type { AuditTrail } from './audit-trail.js';

/**
 * What a route's handler tells its event beyond what the request state says: the user it concerns (a login's
 * user, when it exists), the credential it made (a login's session), and details (never a secret). Set with
 * noteAudit; the last note wins field by field.
 */
export interface AuditNote {
  actorUserId?: number;
  credential?: string;
  /** The code of an answer that is not an error thrown (back-channel logout's 400 `invalid_request`). */
  code?: string;
  details?: Record<string, unknown>;
}

interface AuditedState extends GatewayState {
  auditNote?: AuditNote;
  credential?: Credential;
}

export function noteAudit(ctx: GatewayContext, note: AuditNote): void {
  const state = ctx.state as AuditedState;
  const before = state.auditNote;
  state.auditNote = before ? { ...before, ...note, details: { ...before.details, ...note.details } } : note;
}

/**
 * Koa middleware, first in a route's chain: once the route has answered (or thrown), one event of `action` is
 * recorded with the answer's status and code (`ok` below 400), the time it took, the caller (when the route
 * authenticated one) and the handler's note. The event is written before the answer goes out; a failed write is
 * logged and counted and never changes the answer.
 */
export function auditedAction(trail: AuditTrail, action: string, actor: AuditActor, trustProxy: boolean): GatewayMiddleware {
  return (ctx, next) =>
    withOutcome(ctx, next, ({ status, code, durationMs }) => {
      const state = ctx.state as AuditedState;
      const note = state.auditNote ?? {};
      return trail.record({
        requestId: state.requestId,
        actorUserId: note.actorUserId ?? state.caller?.id ?? null,
        actor: state.credential?.kind ?? actor,
        credential: note.credential ?? state.credential?.id ?? null,
        client: clientAddress(ctx.req, trustProxy),
        action,
        status,
        code: note.code ?? code,
        durationMs,
        details: note.details ?? null,
      });
    });
}

import { noteAudit } from '../audit/audited-action.js';
import { forbidden, invalidPayload, notFound } from '../errors.js';
import type { Stage } from '../http/stage.js';
import type { AuthenticatedState } from './authenticate.js';
import { sendData } from '../http/envelope.js';
import type { AuthServices } from './auth-services.js';
import { requireFields } from './body-fields.js';

/** Checked before the body is read: a caller without the power learns nothing from validation errors. */
export function requireAdminPower({ config }: AuthServices): Stage<AuthenticatedState> {
  return (ctx, next) => {
    if (ctx.state.caller.power < config.auth.admin_power) {
      throw forbidden(`clear-sessions needs power ${config.auth.admin_power}`);
    }
    return next();
  };
}

/** POST {base}/auth/clear-sessions: ends every session of one user, named by `username` or `user_id`. */
export function clearSessions({ sessions, users, log }: AuthServices): Stage<AuthenticatedState> {
  return async (ctx) => {
    const body = ctx.request.body as Record<string, unknown>;
    requireFields(body, { username: { kind: 'string', maxLength: 64 }, user_id: { kind: 'integer' } }, []);
    const byName = body.username !== undefined && body.username !== null;
    const byId = body.user_id !== undefined && body.user_id !== null;
    if (byName === byId) {
      throw invalidPayload([{ field: 'username', rule: 'one_of', message: 'give exactly one of username or user_id' }]);
    }
    const target = byName ? await users.findByUsername(body.username as string) : await users.findCaller(body.user_id as number);
    if (!target) throw notFound('user_not_found', 'no such user');
    noteAudit(ctx, { details: { user_id: target.id } });
    const cleared = await sessions.endAllOf(target.id);
    noteAudit(ctx, { details: { cleared } });
    log.info('sessions cleared', { request_id: ctx.state.requestId, by: ctx.state.caller.id, user_id: target.id, cleared });
    sendData(ctx, { user_id: target.id, cleared });
  };
}

import { unauthorized } from '../errors.js';
import type { GatewayContext } from '../http/context.js';
import type { PipelineStep } from '../pipeline/pipeline-step.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { SessionRead } from '../sessions/session-table.js';
import { hashToken, looksLikeToken } from '../sessions/token.js';

export interface AuthenticateOptions {
  /** Whether this request keeps the session alive (everything but `status`). */
  countsAsUse: boolean;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Resolves `Authorization: Bearer <token>` to a live session and its user, both from one read of the
 * database (or this process's cache of it, see SessionStore, answered without waiting): a disabled user,
 * or one whose sessions were revoked (password change, CLI clear) after this session began, is 401.
 */
export function authenticate(sessions: SessionStore, options: AuthenticateOptions): PipelineStep {
  const admit = (ctx: GatewayContext, read: SessionRead | undefined): void => {
    if (!read) throw unauthorized();
    const { session, caller } = read;
    if (caller.disabled || caller.sessions_revoked_at >= session.createdAt) throw unauthorized();
    if (options.countsAsUse) sessions.touch(read);
    ctx.state.session = session;
    ctx.state.caller = caller;
  };
  return (ctx) => {
    const token = BEARER.exec(ctx.get('authorization'))?.[1];
    if (!token || !looksLikeToken(token)) throw unauthorized();
    const tokenHash = hashToken(token);
    const cached = sessions.cached(tokenHash);
    if (cached) return admit(ctx, cached);
    return sessions.find(tokenHash).then((read) => admit(ctx, read));
  };
}

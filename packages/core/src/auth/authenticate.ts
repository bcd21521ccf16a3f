import { unauthorized } from '../errors.js';
import type { GatewayMiddleware } from '../http/context.js';
import type { SessionStore } from '../sessions/session-store.js';
import { hashToken, looksLikeToken } from '../sessions/token.js';

export interface AuthenticateOptions {
  /** Whether this request keeps the session alive (everything but `status`). */
  countsAsUse: boolean;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Resolves `Authorization: Bearer <token>` to a live session and its user, both from one read of the
 * database (or this process's cache of it, see SessionStore): a disabled user, or one whose sessions were
 * revoked (password change, CLI clear) after this session began, is 401.
 */
export function authenticate(sessions: SessionStore, options: AuthenticateOptions): GatewayMiddleware {
  return async (ctx, next) => {
    const token = BEARER.exec(ctx.get('authorization'))?.[1];
    if (!token || !looksLikeToken(token)) throw unauthorized();
    const read = await sessions.find(hashToken(token));
    if (!read) throw unauthorized();
    const { session, caller } = read;
    if (caller.disabled || caller.sessions_revoked_at >= session.createdAt) throw unauthorized();
    if (options.countsAsUse) sessions.touch(read);
    ctx.state.session = session;
    ctx.state.caller = caller;
    await next();
  };
}

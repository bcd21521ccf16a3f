import { unauthorized } from '../errors.js';
import type { GatewayMiddleware } from '../http/context.js';
import type { SessionStore } from '../sessions/session-store.js';
import { hashToken, looksLikeToken } from '../sessions/token.js';
import type { UserDirectory } from '../users/user-directory.js';

export interface AuthenticateOptions {
  /** Whether this request keeps the session alive (everything but `status`). */
  countsAsUse: boolean;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Resolves `Authorization: Bearer <token>` to a live session and its user, read fresh from the
 * database: a disabled user, or one whose sessions were revoked (password change, CLI clear), is 401
 * and the session ends there.
 */
export function authenticate(sessions: SessionStore, users: UserDirectory, options: AuthenticateOptions): GatewayMiddleware {
  return async (ctx, next) => {
    const token = BEARER.exec(ctx.get('authorization'))?.[1];
    if (!token || !looksLikeToken(token)) throw unauthorized();
    const session = sessions.find(hashToken(token));
    if (!session) throw unauthorized();
    const caller = await users.findCaller(session.userId);
    if (!caller || caller.disabled || caller.sessions_revoked_at >= session.createdAt) {
      await sessions.end(session);
      throw unauthorized();
    }
    if (options.countsAsUse) sessions.touch(session);
    ctx.state.session = session;
    ctx.state.caller = caller;
    await next();
  };
}

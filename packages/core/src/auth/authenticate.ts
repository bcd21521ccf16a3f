import { unauthorized } from '../errors.js';
import type { GatewayContext, GatewayState } from '../http/context.js';
import type { Stage } from '../http/stage.js';
import type { Session } from '../sessions/session.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { SessionRead } from '../sessions/session-table.js';
import { hashToken, looksLikeToken } from '../sessions/token.js';
import type { CallerRecord } from '../users/user-directory.js';

/** What authentication adds to a request's state. */
export interface Authenticated {
  session: Session;
  caller: CallerRecord;
}
export type AuthenticatedState = GatewayState & Authenticated;

export interface AuthenticateOptions {
  /** Whether this request keeps the session alive (everything but `status`). */
  countsAsUse: boolean;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The token hash of an `Authorization: Bearer <token>` header; undefined when it holds no token. */
export function bearerTokenHash(authorization: string | undefined): string | undefined {
  const token = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
  return token && looksLikeToken(token) ? hashToken(token) : undefined;
}

/** Whether a session read lets its caller in: not a disabled user, nor a session begun before a revocation. */
export function admits(read: SessionRead | undefined): read is SessionRead {
  return read !== undefined && !read.caller.disabled && read.caller.sessions_revoked_at < read.session.createdAt;
}

/**
 * Resolves `Authorization: Bearer <token>` to a live session and its user, both from one read of the
 * database (or this process's cache of it, see SessionStore, answered without waiting): a disabled user,
 * or one whose sessions were revoked (password change, CLI clear) after this session began, is 401.
 */
export function authenticate(sessions: SessionStore, options: AuthenticateOptions): Stage<GatewayState, Authenticated> {
  const admit = (ctx: GatewayContext, read: SessionRead | undefined): void => {
    if (!admits(read)) throw unauthorized();
    if (options.countsAsUse) sessions.touch(read);
    const state = ctx.state as AuthenticatedState;
    state.session = read.session;
    state.caller = read.caller;
  };
  // Not async: a cached session goes on at once, without a promise of its own.
  return (ctx, next) => {
    const tokenHash = bearerTokenHash(ctx.req.headers.authorization);
    if (!tokenHash) throw unauthorized();
    const cached = sessions.cached(tokenHash);
    if (cached) {
      admit(ctx, cached);
      return next();
    }
    return sessions.find(tokenHash).then((read) => {
      admit(ctx, read);
      return next();
    });
  };
}

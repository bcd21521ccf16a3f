import { sendData } from '../http/envelope.js';
import type { Stage } from '../http/stage.js';
import type { SessionAuthenticatedState } from './authenticate.js';
import type { AuthServices } from './auth-services.js';

/**
 * POST {base}/auth/logout: ends the calling session, durably, before answering. An OIDC session also gets the
 * provider's end-session URL (RP-initiated logout), read before the session row goes.
 */
export function logout({ sessions }: AuthServices): Stage<SessionAuthenticatedState> {
  return async (ctx) => {
    const session = ctx.state.session;
    const endSessionUrl = session.provider === undefined ? undefined : await sessions.endSessionUrlOf(session);
    await sessions.end(session);
    sendData(ctx, endSessionUrl === undefined ? { logged_out: true } : { logged_out: true, end_session_url: endSessionUrl });
  };
}

import { sendData } from '../http/envelope.js';
import type { Stage } from '../http/stage.js';
import type { AuthenticatedState } from './authenticate.js';
import type { AuthServices } from './auth-services.js';

/** POST {base}/auth/logout: ends the calling session, durably, before answering. */
export function logout({ sessions }: AuthServices): Stage<AuthenticatedState> {
  return async (ctx) => {
    await sessions.end(ctx.state.session);
    sendData(ctx, { logged_out: true });
  };
}

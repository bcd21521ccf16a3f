import { sendData } from '../http/envelope.js';
import type { PipelineStep } from '../pipeline/pipeline-step.js';
import type { AuthServices } from './auth-services.js';

/** POST {base}/auth/logout: ends the calling session, durably, before answering. */
export function logout({ sessions }: AuthServices): PipelineStep {
  return async (ctx) => {
    await sessions.end(ctx.state.session!);
    sendData(ctx, { logged_out: true });
  };
}

import { sendData } from '../http/envelope.js';
import type { PipelineStep } from '../pipeline/pipeline-step.js';
import { isoTime } from './auth-services.js';

/** GET {base}/auth/status: whether the session lives and until when; does not count as use. */
export function status(): PipelineStep {
  return (ctx) => {
    const session = ctx.state.session!;
    const caller = ctx.state.caller!;
    sendData(ctx, {
      active: true,
      user: { id: caller.id, username: caller.username, power: caller.power },
      created_at: isoTime(session.createdAt),
      last_used_at: isoTime(session.lastUsedAt),
      expires_at: isoTime(session.expiresAt),
    });
  };
}

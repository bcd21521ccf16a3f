import { sendData } from '../http/envelope.js';
import type { PipelineStep } from '../pipeline/pipeline-step.js';
import type { Session } from '../sessions/session.js';
import type { CallerRecord } from '../users/user-directory.js';
import { isoTime } from './auth-services.js';

/** The data of a status answer: whether the session lives and until when. */
export function statusData(session: Session, caller: CallerRecord): Record<string, unknown> {
  return {
    active: true,
    user: { id: caller.id, username: caller.username, power: caller.power },
    created_at: isoTime(session.createdAt),
    last_used_at: isoTime(session.lastUsedAt),
    expires_at: isoTime(session.expiresAt),
    ...(session.provider === undefined ? {} : { provider: session.provider }),
  };
}

/** GET {base}/auth/status: whether the session lives and until when; does not count as use. */
export function status(): PipelineStep {
  return (ctx) => sendData(ctx, statusData(ctx.state.session!, ctx.state.caller!));
}

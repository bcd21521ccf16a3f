import { sendData } from '../http/envelope.js';
import type { Stage } from '../http/stage.js';
import { jsonText, type JsonText } from '../json/json-text.js';
import type { Session } from '../sessions/session.js';
import type { SessionRead } from '../sessions/session-table.js';
import type { CallerRecord } from '../users/user-directory.js';
import { isoTime } from './auth-services.js';
import type { AuthenticatedState } from './authenticate.js';

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

/**
 * GET {base}/auth/status: whether the session lives and until when; does not count as use. The data's
 * text is kept per session read (a cached read is replaced, never changed, when its session or user is),
 * so a status call with a cached session serialises nothing but its envelope.
 */
export function status(): Stage<AuthenticatedState> {
  const texts = new WeakMap<Session, { caller: CallerRecord; text: JsonText }>();
  const textOf = ({ session, caller }: SessionRead): JsonText => {
    let kept = texts.get(session);
    if (kept?.caller !== caller) texts.set(session, (kept = { caller, text: jsonText(JSON.stringify(statusData(session, caller)), 8) as JsonText }));
    return kept.text;
  };
  return (ctx) => sendData(ctx, textOf(ctx.state));
}

import type { ServerConfig } from '../config/server-config.js';
import type { Session } from '../sessions/session.js';
import { isoTime } from './auth-services.js';

/** The `data` of a login's answer: the same for a password login and an OIDC exchange (README.md, "The auth API"; docs/sso.md). */
export function loginData(
  config: ServerConfig,
  user: { id: number; username: string; power: number },
  { token, session }: { token: string; session: Session },
): Record<string, unknown> {
  return {
    token,
    token_type: 'Bearer',
    expires_at: isoTime(session.expiresAt),
    idle_timeout_s: Math.round(config.sessions.idle_timeout_ms / 1000),
    user: { id: user.id, username: user.username, power: user.power },
  };
}

import { scopeList, type ApiKey } from '../api-keys/api-key.js';
import { sendData } from '../http/envelope.js';
import type { Stage } from '../http/stage.js';
import { jsonText, type JsonText } from '../json/json-text.js';
import type { Session } from '../sessions/session.js';
import type { CallerRecord } from '../users/user-directory.js';
import { isoTime } from './auth-services.js';
import type { AuthenticatedState } from './authenticate.js';
import type { JwtIdentity } from './jwt/jwt-issuers.js';

const userOf = (caller: CallerRecord) => ({ id: caller.id, username: caller.username, power: caller.power });

/** The data of a status answer: whether the session lives and until when. */
export function statusData(session: Session, caller: CallerRecord): Record<string, unknown> {
  return {
    active: true,
    user: userOf(caller),
    created_at: isoTime(session.createdAt),
    last_used_at: isoTime(session.lastUsedAt),
    expires_at: isoTime(session.expiresAt),
    ...(session.provider === undefined ? {} : { provider: session.provider }),
  };
}

/** The data of a status answer for an API key (docs/api-keys.md): its times (null when none), and which key. */
export function keyStatusData(key: ApiKey, caller: CallerRecord): Record<string, unknown> {
  return {
    active: true,
    user: userOf(caller),
    created_at: isoTime(key.createdAt),
    last_used_at: key.lastUsedAt === null ? null : isoTime(key.lastUsedAt),
    expires_at: key.expiresAt === null ? null : isoTime(key.expiresAt),
    kind: 'api_key',
    key_id: key.id,
    name: key.name,
    scope: scopeList(key.scope),
  };
}

/** The data of a status answer for a workload token (auth.jwt_issuers): its times, the issuer's name and the subject. */
export function jwtStatusData(jwt: JwtIdentity, caller: CallerRecord): Record<string, unknown> {
  return {
    active: true,
    user: userOf(caller),
    created_at: jwt.issuedAt === null ? null : isoTime(jwt.issuedAt),
    last_used_at: null,
    expires_at: isoTime(jwt.expiresAt),
    kind: 'jwt',
    issuer: jwt.issuer,
    subject: jwt.subject,
    scope: scopeList(jwt.scope),
  };
}

/**
 * GET {base}/auth/status: whether the session (or API key) lives and until when; does not count as use. The
 * data's text is kept per read (a cached read is replaced, never changed, when its session, key or user is),
 * so a status call with a cached credential serialises nothing but its envelope.
 */
export function status(): Stage<AuthenticatedState> {
  const texts = new WeakMap<Session | ApiKey | JwtIdentity, { caller: CallerRecord; text: JsonText }>();
  const textOf = ({ session, apiKey, jwt, caller }: AuthenticatedState): JsonText => {
    const read = (session ?? apiKey ?? jwt)!;
    let kept = texts.get(read);
    if (kept?.caller !== caller) {
      const data = session ? statusData(session, caller) : apiKey ? keyStatusData(apiKey, caller) : jwtStatusData(jwt!, caller);
      texts.set(read, (kept = { caller, text: jsonText(JSON.stringify(data), 8) as JsonText }));
    }
    return kept.text;
  };
  return (ctx) => sendData(ctx, textOf(ctx.state));
}

import { GatewayError } from '../errors.js';
import type { GatewayMiddleware } from '../http/context.js';
import { clientAddress } from '../http/client-address.js';
import { sendData } from '../http/envelope.js';
import { rateLimited } from '../errors.js';
import { MAX_PASSWORD_LENGTH, verifyAgainstDecoy, verifyPassword } from '../users/passwords.js';
import type { LoginResult } from '../ops/metrics.js';
import { isoTime, type AuthServices } from './auth-services.js';
import { requireFields } from './body-fields.js';

const invalidCredentials = () => new GatewayError(401, 'invalid_credentials', 'invalid username or password');

/** tkgate_logins_total's result for a refused login; other refusals (a bad body) are not login attempts. */
const RESULT_OF_REFUSAL: Record<string, LoginResult> = { invalid_credentials: 'invalid', rate_limited: 'rate_limited', busy: 'busy' };

/** POST {base}/auth/login, counted by result. */
export function login(services: AuthServices): GatewayMiddleware {
  const attempt = loginAttempt(services);
  return async (ctx, next) => {
    try {
      await attempt(ctx, next);
    } catch (err) {
      const result = RESULT_OF_REFUSAL[(err as { code?: string }).code ?? ''];
      if (result) services.metrics.login(result);
      throw err;
    }
    services.metrics.login('success');
  };
}

/** Unknown user, wrong password and disabled user cost the same and answer the same. */
function loginAttempt({ config, sessions, users, limiter, log }: AuthServices): GatewayMiddleware {
  return async (ctx) => {
    const body = ctx.request.body as Record<string, unknown>;
    requireFields(body, { username: { kind: 'string', maxLength: 64 }, password: { kind: 'string', maxLength: MAX_PASSWORD_LENGTH } }, ['username', 'password']);
    const username = body.username as string;
    const password = body.password as string;

    const limitKey = `${username}\u0000${clientAddress(ctx, config.server.trust_proxy)}`;
    const retryAfter = limiter.retryAfterSeconds(limitKey);
    if (retryAfter > 0) throw rateLimited(retryAfter);

    const user = await users.findForLogin(username);
    const passwordMatches = user ? await verifyPassword(user.password_hash, password) : await verifyAgainstDecoy(password);
    if (!user || !passwordMatches || user.disabled) {
      limiter.recordFailure(limitKey);
      log.info('login refused', { request_id: ctx.state.requestId, username, reason: user?.disabled && passwordMatches ? 'disabled' : 'credentials' });
      throw invalidCredentials();
    }
    limiter.reset(limitKey);

    const { token, session } = await sessions.create(user.id);
    log.info('login', { request_id: ctx.state.requestId, user_id: user.id, session: session.tokenHash.slice(0, 8) });
    sendData(ctx, {
      token,
      token_type: 'Bearer',
      expires_at: isoTime(sessions.expiresAt(session)),
      idle_timeout_s: Math.round(config.sessions.idle_timeout_ms / 1000),
      user: { id: user.id, username: user.username, power: user.power },
    });
  };
}

import { hash } from 'node:crypto';
import { noteAudit } from '../audit/audited-action.js';
import { describeDatabaseError, unavailableWhenRefused } from '../db/database-errors.js';
import { GatewayError, rateLimited } from '../errors.js';
import type { GatewayContext, GatewayMiddleware } from '../http/context.js';
import { clientAddress } from '../http/client-address.js';
import { sendData } from '../http/envelope.js';
import type { Logger } from '../log.js';
import { hashPrefix } from '../sessions/session.js';
import { MAX_PASSWORD_LENGTH, verifyAgainstDecoy, verifyPassword } from '../users/passwords.js';
import type { LoginResult } from '../ops/metrics.js';
import type { AuthServices } from './auth-services.js';
import { loginData } from './login-data.js';
import { requireFields } from './body-fields.js';
import { LoginLimiter } from './login-limiter.js';

const invalidCredentials = () => new GatewayError(401, 'invalid_credentials', 'invalid username or password');

/**
 * Logins refused because too many wait for hashing (503 `busy`) are expected under a storm: counted, and
 * reported in one warn line a second at most, never an error line each.
 */
function busyReporter(log: Logger): () => void {
  let refused = 0;
  let reportedAt = 0;
  return () => {
    refused++;
    const now = Date.now();
    if (now - reportedAt < 1000) return;
    log.warn('logins refused while busy', { refused });
    reportedAt = now;
    refused = 0;
  };
}

/** tkgate_logins_total's result for a refused login; other refusals (a bad body) are not login attempts. */
const RESULT_OF_REFUSAL: Record<string, LoginResult> = { invalid_credentials: 'invalid', rate_limited: 'rate_limited', busy: 'busy' };

/** POST {base}/auth/login, counted by result. */
export function login(services: AuthServices): GatewayMiddleware {
  const attempt = loginAttempt(services);
  return async (ctx) => {
    if (!services.config.auth.password_login)
      throw new GatewayError(403, 'password_login_disabled', 'password login is turned off: sign in through an identity provider');
    try {
      await attempt(ctx);
    } catch (err) {
      const result = RESULT_OF_REFUSAL[(err as { code?: string }).code ?? ''];
      if (result) services.metrics.login(result);
      throw err;
    }
    services.metrics.login('success');
  };
}

/** Unknown user, wrong password and disabled user cost the same and answer the same. */
function loginAttempt({ config, sessions, users, limiter, log }: AuthServices): (ctx: GatewayContext) => Promise<void> {
  const reportBusy = busyReporter(log);
  return async (ctx) => {
    const body = ctx.request.body as Record<string, unknown>;
    requireFields(body, { username: { kind: 'string', maxLength: 64 }, password: { kind: 'string', maxLength: MAX_PASSWORD_LENGTH } }, [
      'username',
      'password',
    ]);
    const username = body.username as string;
    const password = body.password as string;

    const limitKey = LoginLimiter.key(username, clientAddress(ctx.req, config.server.trust_proxy));
    const reservation = await unavailableWhenRefused('login attempt not recorded', () => limiter.reserve(limitKey));
    if ('retryAfterS' in reservation) throw rateLimited(reservation.retryAfterS);
    // The reservation ends as a failure (a wrong password), or, when no password was judged wrong (a
    // success, or busy, or the database), is released; a success also forgets the key's failures.
    let outcome: 'failed' | 'released' = 'released';
    try {
      const user = await users.findForLogin(username);
      // The audit trail names the user only when it exists: a typed username is sometimes a password.
      if (user) noteAudit(ctx, { actorUserId: user.id, details: { username } });
      let passwordMatches: boolean;
      // The hashing as a span of the login (no attribute: nothing about the user or the password).
      const span = ctx.state.trace.recording ? ctx.state.trace.startSpan('password-hash') : undefined;
      try {
        // A user signed in by an OIDC provider has no password (an empty hash): it costs and answers as a wrong one.
        passwordMatches = user?.password_hash ? await verifyPassword(user.password_hash, password) : await verifyAgainstDecoy(password);
        span?.end();
      } catch (err) {
        span?.end(err);
        if (err instanceof GatewayError && err.code === 'busy') reportBusy();
        throw err;
      }
      if (!user || !passwordMatches || user.disabled) {
        outcome = 'failed';
        // A typed username is sometimes a password: only an existing one is logged as typed.
        const who = user ? { username } : { username_hash: hashPrefix(hash('sha256', username, 'hex')) };
        log.info('login refused', { request_id: ctx.state.requestId, ...who, reason: user?.disabled && passwordMatches ? 'disabled' : 'credentials' });
        throw invalidCredentials();
      }

      const created = await unavailableWhenRefused('session not created', () => sessions.create(user.id));
      if (!created) {
        outcome = 'failed';
        throw invalidCredentials();
      }
      const { session } = created;
      noteAudit(ctx, { credential: hashPrefix(session.tokenHash) });
      limiter.reset(limitKey).catch((err) => log.warn('failed logins not reset', describeDatabaseError(err)));
      log.info('login', { request_id: ctx.state.requestId, user_id: user.id, session: hashPrefix(session.tokenHash) });
      sendData(ctx, loginData(config, user, created));
    } catch (err) {
      // Until it is settled the reservation holds its place in the budget (and turns into a failure once
      // stale), so neither write can let more wrong passwords through; a failure is on record before the answer.
      const settled = outcome === 'failed' ? limiter.failed(limitKey, reservation.granted) : limiter.release(limitKey, reservation.granted);
      await settled.catch((failure) =>
        log.warn(`login attempt not ${outcome === 'failed' ? 'recorded as failed' : 'released'}`, describeDatabaseError(failure)),
      );
      throw err;
    }
  };
}

import Router from '@koa/router';
import { methodNotAllowed } from '../errors.js';
import type { GatewayState } from '../http/context.js';
import { readJsonObjectBody } from '../http/json-body.js';
import { stepAsMiddleware } from '../pipeline/pipeline-step.js';
import type { AuthServices } from './auth-services.js';
import { authenticate } from './authenticate.js';
import { clearSessions, requireAdminPower } from './clear-sessions.js';
import { login } from './login.js';
import { logout } from './logout.js';
import { status } from './status.js';

/** The four endpoints under {base}/auth/. Any other method on these paths is 405. */
export function authRoutes(services: AuthServices): Router<GatewayState> {
  const { config, sessions } = services;
  const router = new Router<GatewayState>({ prefix: `${config.server.base_url}/auth` });
  const body = readJsonObjectBody(config.server.max_body_bytes);
  const authenticated = stepAsMiddleware(authenticate(sessions, { countsAsUse: true }));

  router.post('/login', body, login(services));
  router.post('/logout', authenticated, logout(services));
  router.get('/status', stepAsMiddleware(authenticate(sessions, { countsAsUse: false })), status());
  router.post('/clear-sessions', authenticated, requireAdminPower(services), body, clearSessions(services));

  for (const [path, method] of [['/login', 'POST'], ['/logout', 'POST'], ['/status', 'GET'], ['/clear-sessions', 'POST']] as const) {
    router.all(path, async (ctx, next) => {
      if (ctx.method === method || (method === 'GET' && ctx.method === 'HEAD')) return next();
      throw methodNotAllowed([method]);
    });
  }
  return router;
}

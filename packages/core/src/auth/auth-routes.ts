import type { GatewayMiddleware } from '../http/context.js';
import { readJsonObjectBody } from '../http/json-body.js';
import { routeTable } from '../http/route-table.js';
import type { AuthServices } from './auth-services.js';
import { authenticate } from './authenticate.js';
import { clearSessions, requireAdminPower } from './clear-sessions.js';
import { login } from './login.js';
import { logout } from './logout.js';
import { status } from './status.js';

/** The four endpoints under {base}/auth/, each a list of steps. Any other method on these paths is 405. */
export function authRoutes(services: AuthServices): GatewayMiddleware {
  const { config, sessions } = services;
  const body = readJsonObjectBody(config.server.max_body_bytes, config.server.body_timeout_ms);
  const authenticated = authenticate(sessions, { countsAsUse: true });
  return routeTable(config.server.base_url, [
    { method: 'POST', path: '/auth/login', steps: [body, login(services)] },
    { method: 'POST', path: '/auth/logout', steps: [authenticated, logout(services)] },
    { method: 'GET', path: '/auth/status', steps: [authenticate(sessions, { countsAsUse: false }), status()] },
    { method: 'POST', path: '/auth/clear-sessions', steps: [authenticated, requireAdminPower(services), body, clearSessions(services)] },
  ]);
}

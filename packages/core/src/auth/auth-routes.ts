import { auditedAction } from '../audit/audited-action.js';
import { readJsonObjectBody } from '../http/json-body.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList } from '../http/stage.js';
import type { AuthServices } from './auth-services.js';
import { authenticate, authenticateSessionOrKey } from './authenticate.js';
import { clearSessions, requireAdminPower } from './clear-sessions.js';
import { login } from './login.js';
import { logout } from './logout.js';
import { status } from './status.js';

/**
 * The four endpoints under {base}/auth/, each a chain of Koa middleware. Any other method on these paths is 405.
 * Only status accepts an API key; logout and clear-sessions answer a key 403 (docs/api-keys.md).
 * A login (once its body is read), a logout and a clear (once authenticated) are recorded in the audit trail.
 */
export function authRoutes(services: AuthServices): RouteContribution {
  const { config } = services;
  const audited = (action: string) => auditedAction(services.audit, action, 'session', config.server.trust_proxy);
  const body = readJsonObjectBody(config.server.max_body_bytes, config.server.body_timeout_ms);
  const authenticated = authenticate(services, { countsAsUse: true });
  const chain = () => StageList.start();
  // prettier-ignore
  return ({ base, add }) => {
    add('POST', `${base}/auth/login`, 'auth/login', ...chain().then('body', body).then('audit', audited('login')).then('login', login(services)).middleware);
    add('POST', `${base}/auth/logout`, 'auth/logout', ...chain().then('authenticate', authenticated).then('audit', audited('logout')).then('logout', logout(services)).middleware);
    add('GET', `${base}/auth/status`, 'auth/status', ...chain().then('authenticate', authenticateSessionOrKey(services, { countsAsUse: false })).then('status', status()).middleware);
    add('POST', `${base}/auth/clear-sessions`, 'auth/clear-sessions',
      ...chain().then('authenticate', authenticated).then('audit', audited('clear_sessions')).then('admin', requireAdminPower(services)).then('body', body).then('clear', clearSessions(services)).middleware);
  };
}

import { readJsonObjectBody } from '../http/json-body.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList } from '../http/stage.js';
import type { AuthServices } from './auth-services.js';
import { authenticate } from './authenticate.js';
import { clearSessions, requireAdminPower } from './clear-sessions.js';
import { login } from './login.js';
import { logout } from './logout.js';
import { status } from './status.js';

/** The four endpoints under {base}/auth/, each a chain of Koa middleware. Any other method on these paths is 405. */
export function authRoutes(services: AuthServices): RouteContribution {
  const { config, sessions } = services;
  const body = readJsonObjectBody(config.server.max_body_bytes, config.server.body_timeout_ms);
  const authenticated = authenticate(sessions, { countsAsUse: true });
  const chain = () => StageList.start();
  // prettier-ignore
  return ({ base, add }) => {
    add('POST', `${base}/auth/login`, 'auth/login', ...chain().then('body', body).then('login', login(services)).middleware);
    add('POST', `${base}/auth/logout`, 'auth/logout', ...chain().then('authenticate', authenticated).then('logout', logout(services)).middleware);
    add('GET', `${base}/auth/status`, 'auth/status', ...chain().then('authenticate', authenticate(sessions, { countsAsUse: false })).then('status', status()).middleware);
    add('POST', `${base}/auth/clear-sessions`, 'auth/clear-sessions',
      ...chain().then('authenticate', authenticated).then('admin', requireAdminPower(services)).then('body', body).then('clear', clearSessions(services)).middleware);
  };
}

import KoaRouter from '@koa/router';
import type Router from '@koa/router';
import { methodNotAllowed } from '../../errors.js';
import type { GatewayMiddleware, GatewayState } from '../../http/context.js';
import { readJsonObjectBody } from '../../http/json-body.js';
import { stepAsMiddleware } from '../../pipeline/pipeline-step.js';
import { oidcBackchannelLogout } from './backchannel-logout-route.js';
import { oidcCallback } from './callback-route.js';
import { oidcExchange } from './exchange-route.js';
import { LoginCodes } from './login-codes.js';
import { oidcLogin } from './login-route.js';
import { LogoutTokens } from './logout-tokens.js';
import type { OidcServices } from './oidc-services.js';
import { PendingLogins } from './pending-logins.js';
import { OidcProviders } from './provider-registry.js';

/** The route's template for logs and metrics (never the provider's name as typed, nor a query). */
const named =
  (route: string): GatewayMiddleware =>
  (ctx, next) => {
    ctx.state.route = route;
    return next();
  };

/**
 * The OIDC routes (SPEC section 11), added to a router whose prefix is server.base_url. Discovery of the
 * configured providers starts here, in the background; `stop` ends its retries.
 */
export function addOidcRoutes(
  router: Router<GatewayState>,
  services: Omit<OidcServices, 'providers' | 'pending' | 'codes' | 'logoutTokens'>,
): { stop(): void } {
  const providers = new OidcProviders(services.config.auth.oidc.providers, services.log);
  void providers.start();
  const all: OidcServices = {
    ...services,
    providers,
    pending: new PendingLogins(services.db),
    codes: new LoginCodes(services.db),
    logoutTokens: new LogoutTokens(services.db),
  };
  const only =
    (method: 'GET' | 'POST'): GatewayMiddleware =>
    async () => {
      throw methodNotAllowed([method]);
    };
  const body = stepAsMiddleware(readJsonObjectBody(services.config.server.max_body_bytes));
  router.post('/auth/oidc/exchange', named('auth/oidc/exchange'), body, oidcExchange(all));
  router.all('/auth/oidc/exchange', named('auth/oidc/exchange'), only('POST'));
  router.get('/auth/oidc/:provider/login', named('auth/oidc/login'), oidcLogin(all));
  router.all('/auth/oidc/:provider/login', named('auth/oidc/login'), only('GET'));
  router.get('/auth/oidc/:provider/callback', named('auth/oidc/callback'), oidcCallback(all));
  router.all('/auth/oidc/:provider/callback', named('auth/oidc/callback'), only('GET'));
  router.post('/auth/oidc/:provider/backchannel-logout', named('auth/oidc/backchannel-logout'), oidcBackchannelLogout(all));
  router.all('/auth/oidc/:provider/backchannel-logout', named('auth/oidc/backchannel-logout'), only('POST'));
  return { stop: () => providers.stop() };
}

/** A router of the OIDC routes alone under server.base_url, until core has one router for every fixed route. */
export function oidcRouter(services: Parameters<typeof addOidcRoutes>[1]): Router<GatewayState> {
  const router = new KoaRouter<GatewayState>({ prefix: services.config.server.base_url });
  addOidcRoutes(router, services);
  return router;
}

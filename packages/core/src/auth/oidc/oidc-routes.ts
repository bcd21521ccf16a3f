import { auditedAction } from '../../audit/audited-action.js';
import { readJsonObjectBody } from '../../http/json-body.js';
import type { RouteContribution } from '../../http/routes.js';
import { oidcBackchannelLogout } from './backchannel-logout-route.js';
import { oidcCallback } from './callback-route.js';
import { oidcExchange } from './exchange-route.js';
import { LoginCodes } from './login-codes.js';
import { oidcLogin } from './login-route.js';
import { LogoutTokens } from './logout-tokens.js';
import type { OidcServices } from './oidc-services.js';
import { PendingLogins } from './pending-logins.js';
import { OidcProviders } from './provider-registry.js';
import type { RateLimitCounters } from '../../rate-limits/rate-limit-counters.js';

/**
 * The OIDC routes (docs/sso.md, "The flow") for the one router (http/routes.ts). Discovery of the configured
 * providers starts here, in the background (its retry timers are unref'd: they never hold a stop).
 */
export function oidcRoutes(
  services: Omit<OidcServices, 'providers' | 'pending' | 'codes' | 'logoutTokens' | 'loginStarts'> & { rateLimitCounters: RateLimitCounters },
): RouteContribution {
  const providers = new OidcProviders(services.config.auth.oidc.providers, services.log);
  void providers.start();
  const all: OidcServices = {
    ...services,
    providers,
    pending: new PendingLogins(services.db),
    codes: new LoginCodes(services.db),
    logoutTokens: new LogoutTokens(services.db),
    loginStarts: {
      counters: services.rateLimitCounters,
      onStoreFailure: services.config.rate_limits.on_store_failure,
      trustProxy: services.config.server.trust_proxy,
      log: services.log,
    },
  };
  const body = readJsonObjectBody(services.config.server.max_body_bytes, services.config.server.body_timeout_ms);
  const audited = (action: string) => auditedAction(services.audit, action, 'oidc', services.config.server.trust_proxy);
  return ({ base, add }) => {
    add('POST', `${base}/auth/oidc/exchange`, 'auth/oidc/exchange', body, audited('oidc_login'), oidcExchange(all));
    add('GET', `${base}/auth/oidc/:provider/login`, 'auth/oidc/:provider/login', oidcLogin(all));
    add('GET', `${base}/auth/oidc/:provider/callback`, 'auth/oidc/:provider/callback', oidcCallback(all));
    add(
      'POST',
      `${base}/auth/oidc/:provider/backchannel-logout`,
      'auth/oidc/:provider/backchannel-logout',
      audited('backchannel_logout'),
      oidcBackchannelLogout(all),
    );
  };
}

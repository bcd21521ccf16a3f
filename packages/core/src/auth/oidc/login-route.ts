import * as client from 'openid-client';
import { coreError, GatewayError, notFound } from '../../errors.js';
import type { GatewayContext } from '../../http/context.js';
import type { OidcServices } from './oidc-services.js';
import { redirectUriOf, requestOrigin } from './oidc-services.js';
import { bindToBrowser } from './browser-binding.js';
import { countLoginStart } from './login-starts.js';
import { isAllowedReturnTo } from './return-to.js';

/** What a pending login may keep of the caller's return_to (the row lives 10 minutes, for anyone who asks). */
const MAX_RETURN_TO_BYTES = 2048;

/** The provider's return_to prefixes, and the console's own page on this origin when it is served (docs/console.md). */
function allowedReturnTo({ config }: OidcServices, prefixes: readonly string[], ctx: GatewayContext): readonly string[] {
  return config.console.enabled ? [...prefixes, `${config.server.public_url || requestOrigin(ctx)}${config.server.base_url}/console/`] : prefixes;
}

/** The provider a route names: 404 provider_not_found when auth.oidc.providers has none of that name. */
export function providerOf({ providers }: OidcServices, ctx: GatewayContext) {
  const provider = providers.get(ctx.params.provider!);
  if (!provider) throw notFound('provider_not_found', `no OIDC provider named ${JSON.stringify(ctx.params.provider)}`);
  return provider;
}

/**
 * GET {base}/auth/oidc/:provider/login?return_to=URL: a pending login (state, nonce, PKCE verifier, return_to)
 * (at most 2 KiB; at most LOGIN_STARTS_PER_ADDRESS starts per address and window) stored for 10 minutes and bound to this browser by a cookie (browser-binding.ts), then 302 to the provider's authorization endpoint (code flow, PKCE S256).
 */
export function oidcLogin(services: OidcServices) {
  return async (ctx: GatewayContext): Promise<void> => {
    const provider = providerOf(services, ctx);
    const returnTo = ctx.query.return_to;
    if (typeof returnTo === 'string' && Buffer.byteLength(returnTo) > MAX_RETURN_TO_BYTES) {
      throw new GatewayError(400, 'invalid_return_to', `return_to must be at most ${MAX_RETURN_TO_BYTES} bytes`, {
        details: [{ field: 'return_to', rule: 'max_length', message: `at most ${MAX_RETURN_TO_BYTES} bytes` }],
      });
    }
    if (typeof returnTo !== 'string' || !isAllowedReturnTo(returnTo, allowedReturnTo(services, provider.config.return_to, ctx))) {
      throw new GatewayError(400, 'invalid_return_to', "return_to must be a URL under one of the provider's allowed return_to prefixes", {
        details: [{ field: 'return_to', rule: 'allowed_prefix', message: 'not an allowed return_to' }],
      });
    }
    if (!provider.discovered) {
      throw coreError('unavailable', `the identity provider ${provider.config.name} has not answered yet; try again`, { headers: { 'Retry-After': '5' } });
    }
    await countLoginStart(services.loginStarts, ctx);
    const state = client.randomState();
    const nonce = client.randomNonce();
    const codeVerifier = client.randomPKCECodeVerifier();
    await services.pending.purgeExpired();
    await services.pending.add(state, { provider: provider.config.name, nonce, codeVerifier, returnTo });
    bindToBrowser(ctx, state);
    const url = client.buildAuthorizationUrl(provider.discovered, {
      redirect_uri: redirectUriOf(services.config, provider.config, requestOrigin(ctx)),
      scope: provider.config.scopes.join(' '),
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.redirect(url.href);
  };
}

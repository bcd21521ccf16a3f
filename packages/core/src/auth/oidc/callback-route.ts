import * as client from 'openid-client';
import { coreError } from '../../errors.js';
import type { GatewayContext } from '../../http/context.js';
import { bindCodeToBrowser, newCodeBinding, takeBrowserBinding } from './browser-binding.js';
import { mapClaims } from './claim-mapping.js';
import { providerOf } from './login-route.js';
import type { OidcServices } from './oidc-services.js';
import { redirectUriOf, requestOrigin } from './oidc-services.js';
import { signInUser, SignInRefused, type SignInRefusal } from './oidc-users.js';
import type { OidcProvider } from './provider-registry.js';
import type { PendingLogin } from './pending-logins.js';
import { isUniqueViolation } from '../../db/database-errors.js';

/** How far ahead of this gateway's clock a provider's clock may be (an ID token's iat). */
const IAT_LEEWAY_S = 60;

/**
 * openid-client's codes for a provider that failed rather than sent a bad token: it did not answer within the
 * request timeout (the discovery's, 10 s), or answered with an unexpected status or no JSON.
 */
const PROVIDER_FAILURES = new Set(['OAUTH_TIMEOUT', 'OAUTH_ABORT', 'OAUTH_RESPONSE_IS_NOT_CONFORM', 'OAUTH_RESPONSE_IS_NOT_JSON']);

const invalidState = () => coreError('invalid_state', 'unknown, used or expired sign-in state: start the sign-in again');

/** 302 to the pending login's return_to with the outcome in the fragment (never in the query, never logged). */
function redirectWithFragment(ctx: GatewayContext, returnTo: string, fragment: Record<string, string>): void {
  const target = new URL(returnTo);
  target.hash = new URLSearchParams(fragment).toString();
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.redirect(target.href);
}

/** The provider refused (an error answer, or it could not be reached): access_denied; anything else is the ID token's fault. */
function refusalOf(err: unknown): SignInRefusal {
  if (err instanceof SignInRefused) return err.code;
  if (err instanceof client.ResponseBodyError || err instanceof client.AuthorizationResponseError) return 'access_denied';
  if (err instanceof TypeError && /fetch/i.test(err.message)) return 'access_denied';
  if (err instanceof client.ClientError && PROVIDER_FAILURES.has(String(err.code))) return 'access_denied';
  // Another sign-in created the same username (or the same subject) at the same moment.
  if (isUniqueViolation(err)) return 'account_conflict';
  return 'invalid_id_token';
}

/**
 * GET {base}/auth/oidc/:provider/callback?code&state: the pending login of `state` (once), from the browser that
 * started it (its cookie, browser-binding.ts: else #error=invalid_state, the code unused), the code exchanged
 * with its PKCE verifier, the ID token checked by openid-client (signature from the JWKS, iss, aud, azp, exp,
 * iat, nonce; OIDC Core 3.1.3.7), the user matched by (provider, sub) and mapped from the claims, then 302 to
 * return_to#login_code=… with the code's cookie (only this browser can exchange it); any failure after the state
 * is known goes to return_to#error=….
 */
export function oidcCallback(services: OidcServices) {
  return async (ctx: GatewayContext): Promise<void> => {
    const provider = providerOf(services, ctx);
    const state = ctx.query.state;
    const pending = typeof state === 'string' && state.length <= 256 ? await services.pending.take(state) : undefined;
    if (!pending || pending.provider !== provider.config.name) throw invalidState();
    const sameBrowser = takeBrowserBinding(ctx, state as string);
    try {
      if (!sameBrowser) throw new SignInRefused('invalid_state', 'the callback came from another browser than the one that started the sign-in');
      const code = await signIn(services, ctx, provider, pending, state as string);
      services.log.info('oidc sign-in', { request_id: ctx.state.requestId, provider: provider.config.name });
      redirectWithFragment(ctx, pending.returnTo, { login_code: code });
    } catch (err) {
      const refusal = refusalOf(err);
      services.metrics.login('invalid', 'oidc');
      services.log.info('oidc sign-in refused', {
        request_id: ctx.state.requestId,
        provider: provider.config.name,
        reason: refusal,
        cause: (err as Error).message,
      });
      redirectWithFragment(ctx, pending.returnTo, { error: refusal });
    }
  };
}

async function signIn(services: OidcServices, ctx: GatewayContext, provider: OidcProvider, pending: PendingLogin, state: string): Promise<string> {
  const { config } = provider;
  if (!provider.discovered) throw new SignInRefused('access_denied', 'the provider has not been discovered');
  const callbackUrl = new URL(redirectUriOf(services.config, config, requestOrigin(ctx)));
  callbackUrl.search = ctx.querystring;
  const tokens = await client.authorizationCodeGrant(provider.discovered, callbackUrl, {
    pkceCodeVerifier: pending.codeVerifier,
    expectedState: state,
    expectedNonce: pending.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (!claims) throw new SignInRefused('invalid_id_token', 'no ID token');
  // openid-client checks that iat is a number, not that it has passed: a token from the future is refused here.
  if (claims.iat > Date.now() / 1000 + IAT_LEEWAY_S) throw new SignInRefused('invalid_id_token', 'the ID token was issued in the future');
  const user = await signInUser(services.db, { provider: config.name, subject: claims.sub, createUsers: config.create_users }, mapClaims(claims, config));
  const endSession = provider.discovered.serverMetadata().end_session_endpoint
    ? client.buildEndSessionUrl(provider.discovered, config.post_logout_redirect_uri ? { post_logout_redirect_uri: config.post_logout_redirect_uri } : {}).href
    : null;
  const binding = newCodeBinding();
  const code = await services.codes.issue(
    { userId: user.id, provider: config.name, subject: claims.sub, sid: typeof claims.sid === 'string' ? claims.sid : null, endSessionUrl: endSession },
    binding,
  );
  bindCodeToBrowser(ctx, code, binding);
  return code;
}

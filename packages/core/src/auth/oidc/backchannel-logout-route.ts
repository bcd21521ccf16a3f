import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import { noteAudit } from '../../audit/audited-action.js';
import { GatewayError } from '../../errors.js';
import type { GatewayContext } from '../../http/context.js';
import { readPayloadBody } from '../../http/payload-body.js';
import type { OidcServices } from './oidc-services.js';
import type { OidcProvider } from './provider-registry.js';

const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** A logout token issued longer ago than this is refused (docs/sso.md, "Back-channel logout"). */
const MAX_AGE_S = 5 * 60;
const CLOCK_TOLERANCE_S = 30;
/** Asymmetric algorithms only: `none` and HMAC (the client secret as key) are never accepted. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

class InvalidLogoutToken extends Error {}

/** jose's remote key sets, one per provider's jwks_uri: cached, fetched again when a token names an unknown `kid`. */
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
function keySetOf(jwksUri: string) {
  let keySet = keySets.get(jwksUri);
  if (!keySet) keySets.set(jwksUri, (keySet = createRemoteJWKSet(new URL(jwksUri))));
  return keySet;
}

/** OpenID Connect Back-Channel Logout 1.0, section 2.6: every check of a logout token but the jti's. */
async function verifyLogoutToken(provider: OidcProvider, token: string): Promise<JWTPayload & { sid?: string; sub?: string; jti: string; iat: number }> {
  const metadata = provider.discovered?.serverMetadata();
  if (!metadata?.jwks_uri) throw new InvalidLogoutToken('the provider is not discovered');
  const { payload } = await jwtVerify(token, keySetOf(metadata.jwks_uri), {
    issuer: metadata.issuer,
    audience: provider.config.client_id,
    algorithms: ALGORITHMS,
    maxTokenAge: MAX_AGE_S,
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ['iat', 'jti', 'events'],
  });
  const events = payload.events as Record<string, unknown> | undefined;
  const event = events && typeof events === 'object' ? events[BACKCHANNEL_EVENT] : undefined;
  if (!event || typeof event !== 'object' || Array.isArray(event)) throw new InvalidLogoutToken('events has no back-channel logout event');
  if ('nonce' in payload) throw new InvalidLogoutToken('a logout token must not hold a nonce');
  if (typeof payload.sid !== 'string' && typeof payload.sub !== 'string') throw new InvalidLogoutToken('neither sid nor sub');
  if (typeof payload.jti !== 'string' || payload.jti === '') throw new InvalidLogoutToken('no jti');
  return payload as JWTPayload & { sid?: string; sub?: string; jti: string; iat: number };
}

function answerInvalid(ctx: GatewayContext): void {
  noteAudit(ctx, { code: 'invalid_request' });
  ctx.status = 400;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: 'invalid_request' };
}

/**
 * POST {base}/auth/oidc/:provider/backchannel-logout with form field logout_token: a verified, fresh, unseen
 * logout token ends the sessions of its IdP session (`sid`) or of its user (`sub`) in the database; this
 * instance forgets them at once, the others within sessions.cache_ttl. Answers as the spec says: 200 with an
 * empty body, or 400 {"error":"invalid_request"} (not the envelope).
 */
export function oidcBackchannelLogout({ config, providers, sessions, logoutTokens, log }: OidcServices) {
  return async (ctx: GatewayContext): Promise<void> => {
    const provider = providers.get(ctx.params.provider!);
    let claims;
    try {
      if (!provider) throw new InvalidLogoutToken('unknown provider');
      const { body } = await readPayloadBody(ctx, {
        endpointMax: undefined,
        serverMax: config.server.max_body_bytes,
        allowedContentTypes: ['application/x-www-form-urlencoded'],
        timeoutMs: config.server.body_timeout_ms,
      });
      const token = (body as Record<string, unknown>).logout_token;
      if (typeof token !== 'string') throw new InvalidLogoutToken('no logout_token field');
      claims = await verifyLogoutToken(provider, token);
      const keepUntil = (claims.iat + MAX_AGE_S + CLOCK_TOLERANCE_S) * 1000;
      if (!(await logoutTokens.firstSight(provider.config.name, claims.jti, keepUntil))) throw new InvalidLogoutToken('jti seen before');
    } catch (err) {
      // A database that fails is the gateway's problem (503/500), not the provider's.
      if (!(err instanceof InvalidLogoutToken || err instanceof errors.JOSEError || err instanceof GatewayError)) throw err;
      log.info('back-channel logout refused', { request_id: ctx.state.requestId, provider: ctx.params.provider, reason: (err as Error).message });
      return answerInvalid(ctx);
    }
    const ended = await sessions.endOidc(provider.config.name, { sid: claims.sid, sub: claims.sub });
    noteAudit(ctx, { details: { provider: provider.config.name, sessions_ended: ended } });
    log.info('back-channel logout', { request_id: ctx.state.requestId, provider: provider.config.name, sessions_ended: ended });
    ctx.status = 200;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = '';
  };
}

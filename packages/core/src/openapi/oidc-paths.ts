import type { JsonSchema } from '../plugins/response-description.js';
import { jsonBody } from './auth-paths.js';
import { errorResponses, INVALID_PAYLOAD, PAYLOAD_TOO_LARGE, successResponse } from './envelope-schemas.js';

/**
 * The single sign-on routes (docs/sso.md), described when at least one provider is configured. The login and
 * callback answer with redirects, back-channel logout in the form the OpenID spec fixes; none takes a token.
 */
export function oidcPaths(maxBodyBytes: number, loginData: JsonSchema): Record<string, JsonSchema> {
  const provider = { name: 'provider', in: 'path', required: true, schema: { type: 'string' }, description: 'the provider name of auth.oidc.providers' };
  const redirect = (description: string) => ({ description, headers: { Location: { schema: { type: 'string', format: 'uri' } } } });
  return {
    '/auth/oidc/{provider}/login': {
      get: {
        operationId: 'auth.oidc.login',
        tags: ['auth'],
        summary: 'Start a sign-in at the identity provider (a browser navigation, not a fetch).',
        security: [],
        parameters: [
          provider,
          {
            name: 'return_to',
            in: 'query',
            required: true,
            schema: { type: 'string', format: 'uri' },
            description: "the page that gets #login_code; one of the provider's return_to prefixes",
          },
        ],
        responses: {
          302: redirect("to the provider's authorization endpoint (code flow, PKCE S256, state, nonce)."),
          ...errorResponses([
            { status: 400, code: 'invalid_return_to', description: "return_to is not under one of the provider's allowed prefixes, or is longer than 2 KiB." },
            { status: 404, code: 'provider_not_found', description: 'no provider of that name.' },
            { status: 429, code: 'rate_limited', description: 'too many sign-ins started from this client address in 10 minutes; see Retry-After.' },
            {
              status: 503,
              code: 'unavailable',
              description: 'the provider has not been discovered yet, or the rate-limit store did not answer; see Retry-After.',
            },
          ]),
        },
      },
    },
    '/auth/oidc/{provider}/callback': {
      get: {
        operationId: 'auth.oidc.callback',
        tags: ['auth'],
        summary: 'Where the provider sends the browser back: redirects to return_to with #login_code or #error.',
        security: [],
        parameters: [provider],
        responses: {
          302: redirect('to return_to#login_code=… (single use, 60 s), or return_to#error=<code>.'),
          ...errorResponses([{ status: 400, code: 'invalid_state', description: 'the state is unknown, used or expired.' }]),
        },
      },
    },
    '/auth/oidc/exchange': {
      post: {
        operationId: 'auth.oidc.exchange',
        tags: ['auth'],
        summary: 'Exchange a login_code for a session token, as a password login gives.',
        security: [],
        requestBody: jsonBody({ type: 'object', required: ['login_code'], properties: { login_code: { type: 'string' } } }, maxBodyBytes),
        responses: {
          200: successResponse('A new session.', loginData),
          ...errorResponses([
            INVALID_PAYLOAD,
            { status: 400, code: 'invalid_login_code', description: 'the code is unknown, used or expired.' },
            PAYLOAD_TOO_LARGE,
          ]),
        },
      },
    },
    '/auth/oidc/{provider}/backchannel-logout': {
      post: {
        operationId: 'auth.oidc.backchannelLogout',
        tags: ['auth'],
        summary: "The provider's back-channel logout (OpenID Connect Back-Channel Logout 1.0): ends the sessions of that sid or sub.",
        security: [],
        parameters: [provider],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': { schema: { type: 'object', required: ['logout_token'], properties: { logout_token: { type: 'string' } } } },
          },
        },
        responses: {
          200: { description: 'The sessions are ended (an empty body, Cache-Control: no-store).' },
          400: {
            description: "The logout token is invalid (the spec's JSON form, not the envelope).",
            content: { 'application/json': { schema: { type: 'object', properties: { error: { const: 'invalid_request' } } } } },
          },
        },
      },
    },
  };
}

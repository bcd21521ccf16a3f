import type { JsonSchema } from '../plugins/response-description.js';
import { errorResponses, INVALID_PAYLOAD, PAYLOAD_TOO_LARGE, successResponse, UNAUTHORIZED } from './envelope-schemas.js';

/** The auth endpoints (README.md, "The auth API") and the description itself, as OpenAPI path items. */

const user = {
  type: 'object',
  required: ['id', 'username', 'power'],
  properties: { id: { type: 'integer' }, username: { type: 'string' }, power: { type: 'integer' } },
};
const time = { type: 'string', format: 'date-time' };

/** The data of a login (password, or a login_code's exchange). */
export const LOGIN_DATA: JsonSchema = {
  type: 'object',
  required: ['token', 'token_type', 'expires_at', 'idle_timeout_s', 'user'],
  properties: { token: { type: 'string' }, token_type: { const: 'Bearer' }, expires_at: time, idle_timeout_s: { type: 'integer' }, user },
};

/** A JSON request body of at most `maxBodyBytes`. */
export const jsonBody = (schema: JsonSchema, maxBodyBytes: number): JsonSchema => ({
  required: true,
  content: { 'application/json': { schema } },
  'x-max-body-bytes': maxBodyBytes,
});

export interface AuthPathOptions {
  maxBodyBytes: number;
  /** Whether clear-sessions is listed: the caller's power reaches auth.admin_power (always for the CLI). */
  admin: boolean;
  /** Whether the routes only a session may use are listed (logout, clear-sessions): not for an API key. */
  session: boolean;
}

export function authPaths({ maxBodyBytes, admin, session }: AuthPathOptions): Record<string, JsonSchema> {
  const paths: Record<string, JsonSchema> = {
    '/auth/login': {
      post: {
        operationId: 'auth.login',
        tags: ['auth'],
        summary: 'Log in: a session token for the Authorization header.',
        security: [],
        requestBody: jsonBody(
          {
            type: 'object',
            required: ['username', 'password'],
            properties: { username: { type: 'string', minLength: 1 }, password: { type: 'string', minLength: 1 } },
          },
          maxBodyBytes,
        ),
        responses: {
          200: successResponse('A new session.', LOGIN_DATA),
          ...errorResponses([
            INVALID_PAYLOAD,
            { status: 401, code: 'invalid_credentials', description: 'unknown user, wrong password or disabled user.' },
            PAYLOAD_TOO_LARGE,
            { status: 429, code: 'rate_limited', description: 'too many failed logins for this username and address; see Retry-After.' },
            { status: 503, code: 'busy', description: 'too many logins wait for hashing; see Retry-After.' },
          ]),
        },
      },
    },
    '/auth/logout': {
      post: {
        operationId: 'auth.logout',
        tags: ['auth'],
        summary: 'End this session.',
        responses: {
          200: successResponse('The session is ended.', { type: 'object', properties: { logged_out: { const: true } } }),
          ...errorResponses([UNAUTHORIZED]),
        },
      },
    },
    '/auth/status': {
      get: {
        operationId: 'auth.status',
        tags: ['auth'],
        summary: 'This session, API key or workload token (does not count as use).',
        responses: {
          200: successResponse('The live session, API key (kind "api_key"; its times may be null) or workload token (kind "jwt").', {
            type: 'object',
            properties: {
              active: { const: true },
              user,
              created_at: time,
              last_used_at: time,
              expires_at: time,
              kind: { enum: ['api_key', 'jwt'] },
              key_id: { type: 'string' },
              name: { type: 'string' },
              issuer: { type: 'string', description: 'kind "jwt": the name of the auth.jwt_issuers entry the token matched' },
              subject: { type: 'string', description: 'kind "jwt": the token\'s sub' },
              scope: { type: 'array', items: { type: 'string' } },
            },
          }),
          ...errorResponses([UNAUTHORIZED]),
        },
      },
    },
    '/toolkit.schema.json': {
      get: {
        operationId: 'toolkitSchema',
        tags: ['auth'],
        summary: 'The JSON Schema of toolkit files for the loaded plugins, for editors (no session needed).',
        security: [],
        responses: { 200: { description: 'A JSON Schema (2020-12).', content: { 'application/schema+json': { schema: { type: 'object' } } } } },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openapi',
        tags: ['auth'],
        summary: 'This description, for the caller: the endpoints their power reaches.',
        responses: {
          200: { description: 'An OpenAPI 3.1 document (not wrapped in the envelope).', content: { 'application/json': { schema: { type: 'object' } } } },
          ...errorResponses([UNAUTHORIZED]),
        },
      },
    },
  };
  if (!session) delete paths['/auth/logout'];
  if (admin && session) {
    paths['/auth/clear-sessions'] = {
      post: {
        operationId: 'auth.clearSessions',
        tags: ['auth'],
        summary: 'End every session of a user (needs auth.admin_power).',
        requestBody: jsonBody(
          {
            oneOf: [
              { type: 'object', required: ['username'], properties: { username: { type: 'string' } } },
              { type: 'object', required: ['user_id'], properties: { user_id: { type: 'integer' } } },
            ],
          },
          maxBodyBytes,
        ),
        responses: {
          200: successResponse('The sessions ended.', { type: 'object', properties: { user_id: { type: 'integer' }, cleared: { type: 'integer' } } }),
          ...errorResponses([
            INVALID_PAYLOAD,
            UNAUTHORIZED,
            { status: 403, code: 'forbidden', description: 'the caller is below auth.admin_power.' },
            { status: 404, code: 'user_not_found', description: 'no such user.' },
            PAYLOAD_TOO_LARGE,
          ]),
        },
      },
    };
  }
  return paths;
}

import type { JsonSchema } from '../plugins/response-description.js';
import { jsonBody } from './auth-paths.js';
import { errorResponses, INVALID_PAYLOAD, PAYLOAD_TOO_LARGE, successResponse, UNAUTHORIZED } from './envelope-schemas.js';

/** The API key routes (docs/api-keys.md), for callers with a session. */

const time = { type: 'string', format: 'date-time' };
const orNull = (schema: JsonSchema): JsonSchema => ({ oneOf: [schema, { type: 'null' }] });
const scope = { type: 'array', items: { type: 'string' }, description: 'toolkit names; [] = every toolkit the user may call' };
const KEY_ONLY_SESSIONS = {
  status: 403,
  code: 'forbidden',
  description: 'an API key was sent (keys cannot manage keys), or username names another user without auth.admin_power.',
};

const listing: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'user_id', 'username', 'scope', 'created_at', 'expires_at', 'last_used_at', 'revoked_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    user_id: { type: 'integer' },
    username: { type: 'string' },
    scope,
    created_at: time,
    expires_at: orNull(time),
    last_used_at: orNull(time),
    revoked_at: orNull(time),
  },
};

export function apiKeyPaths(maxBodyBytes: number): Record<string, JsonSchema> {
  return {
    '/auth/api-keys': {
      post: {
        operationId: 'auth.apiKeys.create',
        tags: ['auth'],
        summary: 'Create an API key (the key is in this answer only); admins may name another user.',
        requestBody: jsonBody(
          {
            type: 'object',
            required: ['name'],
            additionalProperties: false,
            properties: {
              name: { type: 'string', minLength: 1, maxLength: 64 },
              toolkits: { ...scope, maxItems: 100, items: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' } },
              expires_in: {
                oneOf: [
                  { type: 'string', description: 'a duration: "45s", "30m", "2h", "90d"' },
                  { type: 'number', description: 'seconds' },
                ],
              },
              username: { type: 'string', description: 'the owner (needs auth.admin_power); the caller by default' },
            },
          },
          maxBodyBytes,
        ),
        responses: {
          201: successResponse('The new key.', {
            type: 'object',
            required: ['key', 'id', 'name', 'scope', 'expires_at'],
            properties: {
              key: { type: 'string', pattern: '^tkg_[A-Za-z0-9_-]{43}$' },
              id: { type: 'string' },
              name: { type: 'string' },
              scope,
              expires_at: orNull(time),
            },
          }),
          ...errorResponses([
            INVALID_PAYLOAD,
            UNAUTHORIZED,
            KEY_ONLY_SESSIONS,
            { status: 404, code: 'user_not_found', description: 'username names no user.' },
            { status: 409, code: 'too_many_keys', description: 'the user has auth.api_keys_per_user live keys already.' },
            PAYLOAD_TOO_LARGE,
          ]),
        },
      },
      get: {
        operationId: 'auth.apiKeys.list',
        tags: ['auth'],
        summary: "The caller's API keys (never the keys themselves); admins may add ?username=U.",
        parameters: [{ name: 'username', in: 'query', required: false, schema: { type: 'string' } }],
        responses: {
          200: successResponse('The keys, oldest first, revoked ones included.', {
            type: 'object',
            required: ['keys'],
            properties: { keys: { type: 'array', items: listing } },
          }),
          ...errorResponses([UNAUTHORIZED, KEY_ONLY_SESSIONS, { status: 404, code: 'user_not_found', description: 'username names no user.' }]),
        },
      },
    },
    '/auth/api-keys/{id}': {
      delete: {
        operationId: 'auth.apiKeys.revoke',
        tags: ['auth'],
        summary: 'Revoke an API key: refused by every instance within sessions.cache_ttl.',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          200: successResponse('The key is revoked.', { type: 'object', properties: { revoked: { const: true } } }),
          ...errorResponses([
            UNAUTHORIZED,
            KEY_ONLY_SESSIONS,
            { status: 404, code: 'key_not_found', description: "no such key, or another user's key without auth.admin_power." },
          ]),
        },
      },
    },
  };
}

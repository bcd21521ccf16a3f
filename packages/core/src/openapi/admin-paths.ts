import type { JsonSchema } from '../plugins/response-description.js';
import { errorResponses, INVALID_PAYLOAD, successResponse, UNAUTHORIZED } from './envelope-schemas.js';

/** GET {base}/admin/audit (docs/audit.md), described for callers with auth.admin_power. */

const nullable = (type: string): JsonSchema => ({ type: [type, 'null'] });

const EVENT: JsonSchema = {
  type: 'object',
  required: ['id', 'at', 'actor', 'action'],
  properties: {
    id: { type: 'integer' },
    at: { type: 'string', format: 'date-time' },
    request_id: nullable('string'),
    actor_user_id: nullable('integer'),
    username: nullable('string'),
    actor: { enum: ['session', 'api_key', 'jwt', 'cli', 'oidc', 'system'] },
    credential: { ...nullable('string'), description: "The first 8 hex of the session's or key's hash, or the key id." },
    client: nullable('string'),
    action: { type: 'string', description: 'login, logout, clear_sessions, oidc_login, backchannel_logout, call, user_add, ...' },
    toolkit: nullable('string'),
    endpoint: { ...nullable('string'), description: "The endpoint's path inside its toolkit." },
    method: nullable('string'),
    status: nullable('integer'),
    code: { ...nullable('string'), description: 'The error code, or ok.' },
    duration_ms: nullable('integer'),
    details: { type: ['object', 'null'], description: 'payload (the audit_fields only), exit_code, username, ...' },
  },
};

const parameter = (name: string, description: string, schema: JsonSchema = { type: 'string' }): JsonSchema => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const TIME = 'a duration back from now (1h, 7d) or an ISO-8601 time';

export function adminPaths(): Record<string, JsonSchema> {
  return {
    '/admin/audit': {
      get: {
        operationId: 'admin.audit',
        tags: ['admin'],
        summary: 'The audit trail, newest first (needs auth.admin_power).',
        parameters: [
          parameter('user', 'only events of this acting user'),
          parameter('toolkit', 'only calls of this toolkit'),
          parameter('action', 'only this action'),
          parameter('since', `events at or after: ${TIME}`),
          parameter('until', `events before: ${TIME}`),
          parameter('limit', 'events per page (default 100)', { type: 'integer', minimum: 1, maximum: 1000 }),
          parameter('cursor', 'the next_cursor of the page before'),
        ],
        responses: {
          200: successResponse('A page of events.', {
            type: 'object',
            required: ['events', 'next_cursor'],
            properties: { events: { type: 'array', items: EVENT }, next_cursor: { ...nullable('string'), description: 'null on the last page' } },
          }),
          ...errorResponses([
            { ...INVALID_PAYLOAD, description: 'a parameter is not valid; details name it.' },
            UNAUTHORIZED,
            { status: 403, code: 'forbidden', description: 'the caller is below auth.admin_power.' },
          ]),
        },
      },
    },
  };
}

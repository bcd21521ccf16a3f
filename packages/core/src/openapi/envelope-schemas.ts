import type { JsonSchema } from '../plugins/response-description.js';

/** The fields every envelope has. */
const envelopeFields = {
  request_id: { type: 'string', description: 'Also in the X-Request-Id header.' },
  endpoint: { type: 'string', description: 'The full request path.' },
};

/** The envelope (README.md, "The auth API") as OpenAPI components, and error responses built on it. */
export const components = {
  securitySchemes: {
    bearerAuth: { type: 'http', scheme: 'bearer', description: 'The token of POST /auth/login (43 characters, base64url).' },
  },
  schemas: {
    SuccessEnvelope: {
      type: 'object',
      required: ['success', 'request_id', 'endpoint', 'data'],
      properties: {
        success: { const: true },
        ...envelopeFields,
        data: { description: 'The result.' },
      },
    },
    ErrorEnvelope: {
      type: 'object',
      required: ['success', 'request_id', 'endpoint', 'error'],
      properties: {
        success: { const: false },
        ...envelopeFields,
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'string' },
            message: { type: 'string' },
            details: { description: 'For invalid_payload, a list of {field, rule, message}.' },
          },
        },
      },
    },
    FieldProblem: {
      type: 'object',
      required: ['field', 'rule', 'message'],
      properties: { field: { type: 'string' }, rule: { type: 'string' }, message: { type: 'string' } },
    },
  },
  headers: {
    RequestId: { description: 'The request id, also in the envelope.', schema: { type: 'string' } },
    RateLimitPolicy: {
      description: 'The rate limit of this endpoint (IETF httpapi ratelimit-headers, a structured field): `"<policy name>";q=<limit>;w=<window s>`.',
      schema: { type: 'string' },
    },
    RateLimit: {
      description: 'What is left of the budget in the current window: `"<policy name>";r=<remaining>;t=<s until the window ends>`.',
      schema: { type: 'string' },
    },
    RetryAfter: { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } },
  },
} as const;

const requestIdHeader = { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };

/** A 200 answer: the success envelope whose `data` has the given schema. */
export function successResponse(description: string, data: JsonSchema = {}): JsonSchema {
  const schema =
    Object.keys(data).length === 0
      ? { $ref: '#/components/schemas/SuccessEnvelope' }
      : { allOf: [{ $ref: '#/components/schemas/SuccessEnvelope' }, { properties: { data } }] };
  return { description, headers: requestIdHeader, content: { 'application/json': { schema } } };
}

export interface ErrorCase {
  status: number;
  code: string;
  description: string;
}

/** The error answers of one operation, grouped by status: each lists its codes in `error.code`. */
export function errorResponses(cases: readonly ErrorCase[]): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCase[]>();
  for (const entry of cases) byStatus.set(entry.status, [...(byStatus.get(entry.status) ?? []), entry]);
  const responses: Record<string, JsonSchema> = {};
  for (const [status, entries] of [...byStatus].sort(([a], [b]) => a - b)) {
    const codes = [...new Set(entries.map((entry) => entry.code))];
    responses[String(status)] = {
      description: entries.map((entry) => `${entry.code}: ${entry.description}`).join(' '),
      headers: requestIdHeader,
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/ErrorEnvelope' },
              { properties: { error: { properties: { code: codes.length === 1 ? { const: codes[0] } : { enum: codes } } } } },
            ],
          },
        },
      },
    };
  }
  return responses;
}

/** Errors every authenticated route can give. */
export const INVALID_SIGNATURE: ErrorCase = {
  status: 401,
  code: 'invalid_signature',
  description: 'a call without a credential whose signature is missing, wrong or too old (docs/triggers.md).',
};
export const UNAUTHORIZED: ErrorCase = { status: 401, code: 'unauthorized', description: 'no token, or one that is unknown, expired or ended.' };
export const INVALID_PAYLOAD: ErrorCase = {
  status: 400,
  code: 'invalid_payload',
  description: 'the payload fails a check; details lists each {field, rule, message}.',
};
export const PAYLOAD_TOO_LARGE: ErrorCase = { status: 413, code: 'payload_too_large', description: 'the body is larger than server.max_body_bytes.' };
export const INTERNAL_ERROR: ErrorCase = { status: 500, code: 'internal_error', description: 'an unexpected failure; the cause is logged.' };

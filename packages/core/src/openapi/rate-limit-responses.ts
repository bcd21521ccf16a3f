import type { JsonSchema } from '../plugins/response-description.js';
import type { RateLimitRule } from '../rate-limits/rate-limit-rule.js';
import type { ErrorCase } from './envelope-schemas.js';

/** What a limited endpoint adds to its operation (docs/rate-limits.md): the two errors, and the headers on every answer. */
export const RATE_LIMIT_ERRORS: ErrorCase[] = [
  { status: 429, code: 'rate_limited', description: 'the rate limit (RateLimit-Policy) is used up for this window; see Retry-After.' },
  { status: 503, code: 'unavailable', description: 'the rate-limit store did not answer (rate_limits.on_store_failure: deny); see Retry-After.' },
];

const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimitPolicy' },
  RateLimit: { $ref: '#/components/headers/RateLimit' },
};
const RETRY_AFTER = { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } };

/** The responses with the rate-limit headers (and Retry-After on 429 and 503), and the rule as `x-rate-limit`. */
export function withRateLimit(op: JsonSchema, responses: Record<string, JsonSchema>, rule: RateLimitRule): void {
  for (const [status, response] of Object.entries(responses)) {
    const retry = status === '429' || status === '503' ? RETRY_AFTER : {};
    responses[status] = { ...response, headers: { ...(response.headers as JsonSchema | undefined), ...RATE_LIMIT_HEADERS, ...retry } };
  }
  op['x-rate-limit'] = { policy: rule.name, limit: rule.limit, window_s: rule.windowMs / 1000, per: rule.per };
}

import { z } from 'zod';
import { durationMs } from '../plugins/config-schemas.js';

/**
 * `rate_limit` in a toolkit file (docs/rate-limits.md), on an endpoint or on the toolkit, and the rule it
 * compiles to. A budget is named by its policy (`<toolkit>/<endpoint path>` or `<toolkit>`) and keyed by
 * that name, `per` and the caller's key: never by a compiled object, so a reload that leaves the rule's
 * name alone keeps its budgets, and a changed limit applies at the next call.
 */
export const RATE_LIMIT_PER = ['user', 'client', 'endpoint'] as const;
export type RateLimitPer = (typeof RATE_LIMIT_PER)[number];

/** Longest window: one day (a daily quota); windows are whole seconds, as the headers give them. */
const MAX_WINDOW_MS = 86_400_000;

export const rateLimitSchema = z
  .strictObject({
    limit: z.number().int().min(1).max(1_000_000_000).describe('Calls admitted per budget and window; the next ones get 429 rate_limited.'),
    window: durationMs
      .refine((ms) => ms >= 1000 && ms <= MAX_WINDOW_MS && ms % 1000 === 0, 'must be whole seconds from 1s to 24h')
      .describe('The window, in whole seconds from 1s to 24h ("1m", "1h", 30). Windows are aligned to the epoch.'),
    per: z
      .enum(RATE_LIMIT_PER)
      .default('user')
      .describe('Whose budget: user (each user, all their sessions and keys), client (each client address), endpoint (one for everyone). Default user.'),
  })
  .describe(
    "Calls admitted per window. On an endpoint: its own budget; on the toolkit: one budget shared by all its endpoints (an endpoint's own replaces it).",
  );

export type RateLimitConfig = z.infer<typeof rateLimitSchema>;

/** A compiled rate_limit: what the rate-limit stage and the OpenAPI description read. */
export interface RateLimitRule {
  /** The policy name: `<toolkit>/<endpoint path>` for an endpoint's budget, `<toolkit>` for a toolkit's. */
  name: string;
  limit: number;
  windowMs: number;
  per: RateLimitPer;
  /** `RateLimit-Policy`, the same on every answer: built once. */
  policyHeader: string;
}

export function compileRateLimit(config: RateLimitConfig | undefined, name: string): RateLimitRule | undefined {
  if (!config) return undefined;
  const quoted = sfString(name);
  return {
    name,
    limit: config.limit,
    windowMs: config.window,
    per: config.per,
    policyHeader: `${quoted};q=${config.limit};w=${config.window / 1000}`,
  };
}

/** A structured-field string (RFC 9651 3.3.3): quoted, with `"` and `\` escaped; names are printable ASCII. */
export function sfString(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

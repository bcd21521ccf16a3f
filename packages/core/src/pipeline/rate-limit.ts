import { hash } from 'node:crypto';
import type { AuthenticatedState } from '../auth/authenticate.js';
import { coreError } from '../errors.js';
import { clientAddress } from '../http/client-address.js';
import type { GatewayContext } from '../http/context.js';
import type { Stage } from '../http/stage.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { RateLimitCounters } from '../rate-limits/rate-limit-counters.js';
import { sfString, type RateLimitRule } from '../rate-limits/rate-limit-rule.js';
import type { EndpointFound, ToolkitFound } from './pipeline-state.js';

export interface RateLimitServices {
  counters: RateLimitCounters;
  /** `rate_limits.on_store_failure`. */
  onStoreFailure: 'deny' | 'allow';
  trustProxy: boolean;
  log: Logger;
  metrics: GatewayMetrics;
}

type LimitedState = AuthenticatedState & ToolkitFound & EndpointFound;

/**
 * Between steps 3 and 4 (docs/rate-limits.md): the endpoint's rate_limit, else its toolkit's, counts this call
 * in the store; a call over the budget is 429 rate_limited before its payload is read. An endpoint without
 * a limit passes straight on (no store, no header). The headers are set before the steps after this one
 * run, so every answer of a limited endpoint carries them, errors included (the error envelope keeps them).
 */
export function rateLimitStep(s: RateLimitServices): Stage<LimitedState> {
  return (ctx, next) => {
    const rule = ctx.state.endpoint.rateLimit ?? ctx.state.toolkit.rateLimit;
    if (rule === undefined) return next();
    return admit(s, ctx, rule).then(() => next());
  };
}

async function admit(s: RateLimitServices, ctx: GatewayContext<LimitedState>, rule: RateLimitRule): Promise<void> {
  ctx.set('RateLimit-Policy', rule.policyHeader);
  const now = Date.now();
  const windowEnd = (Math.floor(now / rule.windowMs) + 1) * rule.windowMs;
  let counted: { hits: number; windowEnd: number };
  try {
    counted = await s.counters.hit(budgetKey(rule, callerKey(ctx, rule, s.trustProxy)), windowEnd);
  } catch (err) {
    return storeFailed(s, ctx, err);
  }
  const resetS = Math.max(1, Math.ceil((counted.windowEnd - Date.now()) / 1000));
  ctx.set('RateLimit', `${sfString(rule.name)};r=${Math.max(0, rule.limit - counted.hits)};t=${resetS}`);
  if (counted.hits <= rule.limit) return;
  s.metrics.rateLimited(ctx.state.route ?? 'other');
  throw coreError('rate_limited', `rate limit ${rule.name} reached: ${rule.limit} calls per ${rule.windowMs / 1000} s; try again later`, {
    headers: { 'Retry-After': String(resetS) },
    details: { policy: rule.name, limit: rule.limit, window_s: rule.windowMs / 1000, retry_after_s: resetS },
  });
}

/** Whose budget the call counts in: the user, the client address, or nobody's in particular (one for all). */
function callerKey(ctx: GatewayContext<LimitedState>, rule: RateLimitRule, trustProxy: boolean): string {
  if (rule.per === 'user') return String(ctx.state.caller.id);
  if (rule.per === 'client') return clientAddress(ctx.req, trustProxy);
  return '';
}

/** The budget's key in the store: its policy, `per` and the caller's key, hashed (no ids or addresses stored). */
const budgetKey = (rule: RateLimitRule, key: string): string => hash('sha256', `${rule.name}\u0000${rule.per}\u0000${key}`, 'hex');

/** The store did not answer: 503 unavailable (deny), or the call goes on, logged and counted (allow). */
function storeFailed(s: RateLimitServices, ctx: GatewayContext<LimitedState>, err: unknown): void {
  if (s.onStoreFailure === 'deny') {
    s.metrics.rateLimitStoreFailure('denied');
    throw coreError('unavailable', 'the rate-limit store did not answer; try again', { headers: { 'Retry-After': '1' }, cause: err });
  }
  s.metrics.rateLimitStoreFailure('allowed');
  s.log.warn('rate-limit store did not answer; call allowed (rate_limits.on_store_failure: allow)', {
    request_id: ctx.state.requestId,
    route: ctx.state.route,
    err,
  });
}

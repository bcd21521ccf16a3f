import { hash } from 'node:crypto';
import { coreError } from '../../errors.js';
import { clientAddress } from '../../http/client-address.js';
import type { GatewayContext } from '../../http/context.js';
import type { Logger } from '../../log.js';
import type { RateLimitCounters } from '../../rate-limits/rate-limit-counters.js';
import { PENDING_LOGIN_MS } from './pending-logins.js';

/**
 * Anyone may start a login, and each start stores a pending login for 10 minutes: a client address may start
 * at most this many per 10-minute window (counted in the rate-limit store every gateway shares), so a flood
 * from one address leaves at most twice this many pending logins (a window and the one before it), while a
 * person who retries a sign-in a few times, or an office behind one address, never meets the limit.
 */
export const LOGIN_STARTS_PER_ADDRESS = 60;

export interface LoginStartServices {
  counters: RateLimitCounters;
  /** `rate_limits.on_store_failure`: the same choice as for endpoints when the store does not answer. */
  onStoreFailure: 'deny' | 'allow';
  trustProxy: boolean;
  log: Logger;
}

/** Counts a login start of the caller's address: 429 rate_limited (with Retry-After) over the limit. */
export async function countLoginStart(s: LoginStartServices, ctx: GatewayContext): Promise<void> {
  const now = Date.now();
  const windowEnd = (Math.floor(now / PENDING_LOGIN_MS) + 1) * PENDING_LOGIN_MS;
  // Hashed, as every budget key (no address stored); the NUL keeps it apart from the endpoints' budgets.
  const key = hash('sha256', `oidc-login-starts\u0000${clientAddress(ctx.req, s.trustProxy)}`, 'hex');
  let counted: { hits: number; windowEnd: number };
  try {
    counted = await s.counters.hit(key, windowEnd);
  } catch (err) {
    if (s.onStoreFailure === 'deny')
      throw coreError('unavailable', 'the rate-limit store did not answer; try again', { headers: { 'Retry-After': '1' }, cause: err });
    s.log.warn('rate-limit store did not answer; login start allowed (rate_limits.on_store_failure: allow)', { request_id: ctx.state.requestId, err });
    return;
  }
  if (counted.hits <= LOGIN_STARTS_PER_ADDRESS) return;
  const retryAfterS = Math.max(1, Math.ceil((counted.windowEnd - Date.now()) / 1000));
  throw coreError('rate_limited', `too many sign-ins started from this address (${LOGIN_STARTS_PER_ADDRESS} per 10 minutes); try again later`, {
    headers: { 'Retry-After': String(retryAfterS) },
    details: { limit: LOGIN_STARTS_PER_ADDRESS, window_s: PENDING_LOGIN_MS / 1000, retry_after_s: retryAfterS },
  });
}

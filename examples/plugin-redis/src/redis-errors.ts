import { GatewayError } from '@tkgate/core';

/** The plugin's error codes, declared at registration (they appear in the gateway's error table). */
export const REDIS_ERRORS = {
  redis_unavailable: { status: 503, meaning: 'Redis could not be reached in time; try again shortly.' },
  redis_wrong_type: { status: 409, meaning: 'The key holds another kind of value than the operation needs (e.g. incr on a list).' },
} as const;

/** What a Redis failure tells the client: a typed error, the cause for the log only. */
export function redisFailure(err: unknown): GatewayError {
  const message = (err as Error)?.message ?? '';
  if (message.startsWith('WRONGTYPE') || message.includes('not an integer')) {
    return new GatewayError(409, 'redis_wrong_type', 'the key holds another kind of value', { cause: err });
  }
  return new GatewayError(503, 'redis_unavailable', 'the data store is unavailable; try again shortly', { headers: { 'Retry-After': '1' }, cause: err });
}

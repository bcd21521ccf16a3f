import { durationMs, z } from '@tkgate/core';
import { parseKey } from './key-template.js';

/** plugin_options."tkgate-plugin-redis" of the server configuration. */
export const optionsSchema = z.strictObject({
  url: z.string().regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL').default('redis://127.0.0.1:6379'),
  /** Every key the plugin touches starts with this, so toolkits cannot reach other applications' keys. */
  key_prefix: z.string().max(64).default('tkgate:'),
  command_timeout: durationMs.default(2_000),
});
export type RedisOptions = z.infer<typeof optionsSchema>;

/**
 * An endpoint's keys. `operation` says what runs:
 * get (a string, or null), set (the payload field `value_field`, with an optional ttl; 201),
 * incr (a counter), push (append `value_field` to a list; 201), range (a list, streamed as NDJSON).
 */
export const endpointSchema = z.strictObject({
  operation: z.enum(['get', 'set', 'incr', 'push', 'range']),
  key: z.array(z.string().min(1).max(128)).min(1).max(8).transform(parseKey),
  value_field: z.string().optional(),
  ttl: durationMs.optional(),
  /** range: at most this many items. */
  limit: z.number().int().min(1).max(10_000).default(1_000),
});
export type RedisEndpoint = z.infer<typeof endpointSchema>;

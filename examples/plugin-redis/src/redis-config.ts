import { durationMs, z } from '@tkgate/core';
import { parseKey } from './key-template.js';

/** plugin_options."tkgate-plugin-redis" of the server configuration. */
export const optionsSchema = z.strictObject({
  url: z
    .string()
    .regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
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
  operation: z.enum(['get', 'set', 'incr', 'push', 'range']).describe('get, set (201), incr, push (201) or range (NDJSON)'),
  key: z
    .array(z.string().min(1).max(128).describe('a literal, or $context.<field> / $payload.<field>'))
    .min(1)
    .max(8)
    .transform(parseKey)
    .describe("the key's parts, joined by ':' after plugin_options key_prefix"),
  value_field: z.string().optional().describe('set and push: the payload field whose string value is stored'),
  ttl: durationMs.optional().describe('set: expiry, e.g. "1h"'),
  limit: z.number().int().min(1).max(10_000).default(1_000).describe('range: at most this many items'),
});
export type RedisEndpoint = z.infer<typeof endpointSchema>;

import { durationMs, secretOr, z } from '@tkgate/core';
import { upstreamTlsSchema } from './upstream-tls.js';

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name');
const headerValue = z.string().regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'must be a header value without line breaks');

/** Headers the configuration may not set: the transport owns them. */
const RESERVED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'content-type', 'x-request-id']);

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

export const httpConfigSchema = z.strictObject({
  upstream: z
    .strictObject({
      url: z
        .url({ protocol: /^(https?|wss?)$/, error: 'must be an http://, https://, ws:// or wss:// URL' })
        .describe('The upstream the request context is POSTed to, or (forward: request) the base the request is forwarded to (http or https).'),
      forward: z
        .enum(['context', 'request'])
        .default('context')
        .describe(
          "context (default): the request context is POSTed as JSON. request: the client's own request is forwarded (method, the rest of a wildcard path, query, filtered body, headers without credentials) and the upstream's answer comes back as it is.",
        ),
      timeout: durationMs.default(10_000).describe("How long to wait for the upstream's headers, and each silence in its body (default 10s)."),
      passthrough: z.boolean().default(false).describe("true: stream the upstream's 2xx answer to the client as it is (downloads), without the envelope."),
      idempotent: z
        .boolean()
        .default(false)
        .describe(
          'true: running a call twice does no harm, so a call whose connection failed before any answer is tried once more (RFC 9110 9.2.2; default false: a call is sent at most once).',
        ),
      headers: z
        .record(headerName, secretOr(headerValue))
        .default({})
        .refine((headers) => Object.keys(headers).every((name) => !RESERVED.has(name.toLowerCase())), {
          message: `may not set ${[...RESERVED].join(', ')}`,
        })
        .describe(
          `Static headers for the upstream (not ${[...RESERVED].join(', ')}); a value may be a secret kept outside the file: { secret: "env:NAME" } or { secret: "file:PATH" }.`,
        ),
      /** JSON mode only: a larger upstream body is a 502, not a memory spike. */
      max_response_bytes: z
        .number()
        .int()
        .min(1)
        .default(DEFAULT_MAX_RESPONSE_BYTES)
        .describe('JSON mode: the largest upstream body accepted (default 1 MiB); larger is 502.'),
      tls: upstreamTlsSchema.optional(),
    })
    .describe('Where and how to call the upstream.'),
  websocket: z
    .boolean()
    .default(false)
    .describe('true: a WebSocket endpoint (method GET, upstream.url ws:// or wss://): the upgrade is relayed to the upstream, frames both ways.'),
  max_message_bytes: z
    .number()
    .int()
    .min(1)
    .default(1024 * 1024)
    .describe('WebSocket: the largest message either side may send (default 1 MiB); a larger one closes the socket with 1009.'),
  idle_timeout: durationMs
    .default(300_000)
    .describe('WebSocket: a socket without a message either way this long is closed with 1001 (default 5m); pings go every 30 s.'),
  max_concurrency: z
    .number()
    .int()
    .min(1)
    .default(64)
    .describe('Upstream calls of this endpoint at once; each holds a connection and up to max_response_bytes (default 64).'),
  max_queue: z.number().int().min(0).default(1024).describe('Requests waiting for one of those places; past it 503 busy with Retry-After (default 1024).'),
});

export type HttpConfig = z.infer<typeof httpConfigSchema>;

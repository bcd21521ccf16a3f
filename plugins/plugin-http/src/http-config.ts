import { durationMs, secretOr, z } from '@tkgate/core';
import { upstreamTlsSchema } from './upstream-tls.js';

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name');
const headerValue = z.string().regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'must be a header value without line breaks');

/** Headers the configuration may not set: the transport owns them. */
const RESERVED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'content-type', 'x-request-id']);

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
/** The most targets one upstream may list. */
const MAX_TARGETS = 32;

const upstreamUrl = z.url({ protocol: /^(https?|wss?)$/, error: 'must be an http://, https://, ws:// or wss:// URL' });

export const httpConfigSchema = z.strictObject({
  upstream: z
    .strictObject({
      url: upstreamUrl
        .optional()
        .describe('The upstream the request context is POSTed to, or (forward: request) the base the request is forwarded to (http or https). Or `targets`.'),
      targets: z
        .array(
          z.union([
            upstreamUrl,
            z.strictObject({
              url: upstreamUrl.describe('The target.'),
              weight: z.number().int().min(1).max(1000).default(1).describe("The target's share of the calls, a positive integer (default 1)."),
            }),
          ]),
        )
        .min(1)
        .max(MAX_TARGETS)
        .optional()
        .describe('Instead of `url`: several upstreams serving the same API, each a URL or { url, weight } (weight a positive integer, default 1).'),
      balance: z
        .enum(['round_robin', 'least_pending'])
        .default('round_robin')
        .describe('targets: round_robin (default; smooth, by weight) or least_pending (the target with the fewest calls running, by weight).'),
      passive: z
        .strictObject({
          failures: z.number().int().min(1).default(3).describe('Failures in a row (no connection, timeout, 5xx) that leave a target out (default 3).'),
          eject_for: durationMs.default(10_000).describe('How long a failing target is left out before one request tries it again (default 10s).'),
        })
        .default({ failures: 3, eject_for: 10_000 })
        .describe('targets: passive health, from the calls themselves.'),
      health: z
        .strictObject({
          path: z
            .string()
            .regex(/^\/[\x21-\x7e]*$/, 'must be a path starting with /')
            .describe('The path probed on each target (GET; 2xx is healthy).'),
          interval: durationMs.default(5_000).describe('Time between probes of one target (default 5s).'),
          timeout: durationMs.default(2_000).describe('A probe without an answer this long failed (default 2s).'),
          healthy: z.number().int().min(1).default(2).describe('Passing probes in a row that bring a target back (default 2).'),
          unhealthy: z.number().int().min(1).default(2).describe('Failing probes in a row that take a target out (default 2).'),
        })
        .optional()
        .describe('targets: active health probes of each target, by each instance (and each worker) on its own.'),
      retries: z
        .number()
        .int()
        .min(0)
        .max(MAX_TARGETS)
        .default(1)
        .describe(
          'targets: other targets a call sent but unanswered is tried on, for GET calls or idempotent endpoints only, within `timeout` (default 1). A call that could not be sent goes to another target whatever its method.',
        ),
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
export type UpstreamConfig = HttpConfig['upstream'];

/** The upstream's URLs with their weights: its `targets`, or its one `url`. */
export function targetsOf(upstream: UpstreamConfig): Array<{ url: string; weight: number }> {
  if (!upstream.targets) return upstream.url === undefined ? [] : [{ url: upstream.url, weight: 1 }];
  return upstream.targets.map((target) => (typeof target === 'string' ? { url: target, weight: 1 } : target));
}

/** The URL a single-URL upstream calls, or the first target (for the span attributes and checks made once). */
export const firstUrl = (upstream: UpstreamConfig): string => upstream.url ?? targetsOf(upstream)[0]?.url ?? '';

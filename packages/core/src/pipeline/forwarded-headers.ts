import type { IncomingHttpHeaders } from 'node:http';

/**
 * Request headers a plugin never sees: credentials of the client, hop-by-hop headers, and the caller's
 * trace context (a plugin passes on call.trace's, with the gateway's own span id, never the raw one).
 */
const WITHHELD_HEADERS = new Set([
  'authorization',
  'cookie',
  'proxy-authorization',
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
  'traceparent',
  'tracestate',
]);

/** The request's headers an endpoint's plugin gets (call.headers): all but the withheld ones, repeated ones joined. */
export function forwardableHeaders(requestHeaders: IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(requestHeaders)) {
    if (!WITHHELD_HEADERS.has(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

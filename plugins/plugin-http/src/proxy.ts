import { GatewayError, jsonText, StreamedResponse, type EndpointCall, type JsonText } from '@tkgate/core';
import type { ConnectionPool } from './connection-pool.js';
import type { HttpConfig } from './http-config.js';
import { passthroughRequest } from './passthrough-reader.js';
import { CONTENT_LENGTH } from './response-head.js';
import { BAD_RESPONSE } from './upstream-failure.js';
import type { UpstreamAnswer, UpstreamRequest, UpstreamResponse, UpstreamTransport } from './upstream-transport.js';

/** Upstream response headers a passthrough answer carries (SPEC: type and disposition; the length apart). */
const PASSTHROUGH_HEADERS = ['content-type', 'content-disposition'];
/** JSON answers nested deeper are refused: whatever walks them recursively (the envelope's stringify) would overflow. */
const MAX_JSON_DEPTH = 64;

type Failure = 'status' | 'timeout' | 'connection' | 'invalid_response' | 'invalid_json' | 'too_deep' | 'too_large' | 'aborted';

function upstreamError(reason: Failure, cause: unknown, status?: number): GatewayError {
  const details: Record<string, unknown> = { reason };
  if (status !== undefined) details.upstream_status = status;
  return new GatewayError(502, 'upstream_error', 'the upstream did not give a usable answer', { details, cause });
}

function classify(err: unknown): Failure {
  const { code, name, message } = err as { code?: string; name?: string; message?: string };
  if (code === 'ETIMEDOUT' || code?.endsWith('_TIMEOUT') || name === 'TimeoutError') return 'timeout';
  if (code === 'ERR_BODY_TOO_LARGE') return 'too_large';
  if (name === 'AbortError' || code === 'ERR_ABORTED' || code === 'UND_ERR_ABORTED') return 'aborted';
  // Malformed HTTP: our reader's refusals, and llhttp's (undici, node:http) parse errors.
  if (
    code === BAD_RESPONSE ||
    code === 'ERR_HEAD_TOO_LARGE' ||
    code?.startsWith('HPE_') ||
    name === 'HTTPParserError' ||
    code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'
  )
    return 'invalid_response';
  // undici's words for an unasked 100 Continue or upgrade.
  if (code === 'UND_ERR_SOCKET' && (message === 'bad response' || message === 'bad upgrade')) return 'invalid_response';
  return 'connection';
}

/** What every call of an endpoint sends the same way, made once per endpoint version (its config object). */
interface Fixed {
  headers: Record<string, string>;
  /** The configured headers (the endpoint's credentials), as the key of the connections its calls may share. */
  connectionGroup: string;
}
const fixedParts = new WeakMap<HttpConfig['upstream'], Fixed>();
function fixedOf(upstream: HttpConfig['upstream']): Fixed {
  let fixed = fixedParts.get(upstream);
  if (!fixed) {
    fixed = {
      headers: { ...upstream.headers, 'content-type': 'application/json', accept: upstream.passthrough ? '*/*' : 'application/json', 'user-agent': 'tkgate' },
      connectionGroup: JSON.stringify(Object.entries(upstream.headers).sort(([a], [b]) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))),
    };
    fixedParts.set(upstream, fixed);
  }
  return fixed;
}

/**
 * One upstream call of a request. A class, so that `signal` (made only if a transport reads it) is a
 * getter on the prototype: an object literal with a getter was measured among the costliest lines of a
 * proxied request.
 */
class ProxiedRequest implements UpstreamRequest {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly timeoutMs: number;
  readonly streamed: boolean;
  readonly connectionGroup: string;
  readonly idempotent: boolean;

  constructor(private readonly call: EndpointCall<HttpConfig>) {
    const { upstream } = call.config;
    const fixed = fixedOf(upstream);
    this.url = upstream.url;
    this.headers = { ...fixed.headers, 'x-request-id': call.requestId };
    this.connectionGroup = fixed.connectionGroup;
    this.idempotent = upstream.idempotent;
    this.body = JSON.stringify(call.context);
    this.timeoutMs = upstream.timeout;
    this.streamed = upstream.passthrough;
  }

  get signal(): AbortSignal {
    return this.call.signal;
  }

  whenClientGone(listener: () => void): () => void {
    return this.call.onClientGone(listener);
  }
}

/**
 * A call that failed for want of a connection before any answer, tried once more: only for an endpoint
 * declared idempotent. Otherwise the request may have reached the upstream already, and a proxy must not
 * repeat a non-idempotent one on its own (RFC 9110 section 9.2.2).
 */
async function onceMore<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (classify(err) !== 'connection' || (err as { upstreamStatus?: number }).upstreamStatus !== undefined) throw err;
    return attempt();
  }
}

/** A release function called once, whichever way the body ends. */
export type Release = () => void;

/**
 * POSTs the request context as JSON. The upstream hears X-Request-Id and the configured headers and
 * nothing of the client's credentials (no Authorization, no Cookie: the client's headers are not forwarded).
 * `release` is called once the upstream exchange is over: at once for JSON, when the stream ends for passthrough.
 */
export async function proxy(transport: UpstreamTransport, pool: ConnectionPool, call: EndpointCall<HttpConfig>, release: Release): Promise<unknown> {
  const { upstream } = call.config;
  const request = new ProxiedRequest(call);
  let streaming = false;
  try {
    if (upstream.passthrough && upstream.url.startsWith('http:')) {
      const response = await passthroughWithoutCopies(request, pool, release);
      streaming = true;
      return response;
    }
    if (!upstream.passthrough) return checkedJson(await fetchWhole(transport, request, upstream.max_response_bytes));
    let response: UpstreamResponse;
    try {
      response = await (request.idempotent ? onceMore(() => transport.post(request)) : transport.post(request));
    } catch (err) {
      throw upstreamError(classify(err), err);
    }
    if (response.status < 200 || response.status > 299) {
      response.body.destroy();
      throw upstreamError('status', new Error(`upstream answered ${response.status}`), response.status);
    }
    streaming = true;
    return passthrough(response, release);
  } finally {
    if (!streaming) release();
  }
}

/** http:// passthrough through the reader that reuses its buffers and keep-alive connections (passthrough-reader.ts). */
async function passthroughWithoutCopies(request: ProxiedRequest, pool: ConnectionPool, release: Release): Promise<StreamedResponse> {
  let head;
  try {
    head = await (request.idempotent ? onceMore(() => passthroughRequest(request, pool)) : passthroughRequest(request, pool));
  } catch (err) {
    throw upstreamError(classify(err), err);
  }
  if (head.status < 200 || head.status > 299) {
    head.discard();
    throw upstreamError('status', new Error(`upstream answered ${head.status}`), head.status);
  }
  const writeBody = head.writeBody;
  const body = (out: Parameters<typeof writeBody>[0]) => writeBody(out).finally(release);
  return new StreamedResponse(body, passthroughHeaders(head.headers, head.contentLength), head.status);
}

/**
 * The headers a passthrough answer carries. Content-Length only when it is the exact number of bytes the
 * client will get: a length that disagrees with the bytes sent would let an upstream smuggle a response.
 */
function passthroughHeaders(upstreamHeaders: Record<string, string | string[] | undefined>, contentLength: number | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSTHROUGH_HEADERS) {
    const value = upstreamHeaders[name];
    if (typeof value === 'string') headers[name] = value;
  }
  if (contentLength !== undefined) headers['content-length'] = String(contentLength);
  return headers;
}

/** got and undici frame the body themselves (llhttp refuses ambiguous framing); a length is forwarded only in its one valid form. */
function passthrough(response: UpstreamResponse, release: Release): StreamedResponse {
  response.body.once('close', release);
  const length = response.headers['content-length'];
  const exact = typeof length === 'string' && CONTENT_LENGTH.test(length) && response.headers['transfer-encoding'] === undefined ? Number(length) : undefined;
  return new StreamedResponse(response.body, passthroughHeaders(response.headers, exact), response.status);
}

/** The upstream's whole 2xx answer, or the 502 that says why there is none. */
async function fetchWhole(transport: UpstreamTransport, request: ProxiedRequest, maxBytes: number): Promise<UpstreamAnswer> {
  let answer: UpstreamAnswer;
  try {
    answer = await (request.idempotent ? onceMore(() => transport.fetchWhole(request, maxBytes)) : transport.fetchWhole(request, maxBytes));
  } catch (err) {
    throw upstreamError(classify(err), err, (err as { upstreamStatus?: number }).upstreamStatus);
  }
  if (answer.status < 200 || answer.status > 299) throw upstreamError('status', new Error(`upstream answered ${answer.status}`), answer.status);
  return answer;
}

/** An empty or blank body is null; anything else must be one JSON value, passed on as checked text (never parsed). */
function checkedJson({ body, status }: UpstreamAnswer): JsonText | null {
  const text = body.toString('utf8');
  if (BLANK.test(text)) return null;
  const checked = jsonText(text, MAX_JSON_DEPTH);
  if (checked === 'too_deep') throw upstreamError('too_deep', new Error(`upstream JSON nested deeper than ${MAX_JSON_DEPTH}`), status);
  if (checked === 'invalid_json') throw upstreamError('invalid_json', new Error('upstream answer is not JSON'), status);
  return checked;
}

const BLANK = /^\s*$/;

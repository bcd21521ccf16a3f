import { GatewayError, jsonDepthExceeds, StreamedResponse, type EndpointCall } from '@tkgate/core';
import type { ConnectionPool } from './connection-pool.js';
import type { HttpConfig } from './http-config.js';
import { passthroughRequest } from './passthrough-reader.js';
import { CONTENT_LENGTH } from './response-head.js';
import { BAD_RESPONSE } from './upstream-failure.js';
import type { UpstreamRequest, UpstreamResponse, UpstreamTransport } from './upstream-transport.js';

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
  if (code === BAD_RESPONSE || code === 'ERR_HEAD_TOO_LARGE' || code?.startsWith('HPE_') || name === 'HTTPParserError' || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') return 'invalid_response';
  // undici's words for an unasked 100 Continue or upgrade.
  if (code === 'UND_ERR_SOCKET' && (message === 'bad response' || message === 'bad upgrade')) return 'invalid_response';
  return 'connection';
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
  const request: UpstreamRequest = {
    url: upstream.url,
    headers: { ...upstream.headers, 'content-type': 'application/json', accept: upstream.passthrough ? '*/*' : 'application/json', 'x-request-id': call.requestId, 'user-agent': 'tkgate' },
    body: JSON.stringify(call.context),
    timeoutMs: upstream.timeout,
    streamed: upstream.passthrough,
    signal: call.signal,
  };
  let streaming = false;
  try {
    if (upstream.passthrough && upstream.url.startsWith('http:')) {
      const response = await passthroughWithoutCopies(request, pool, release);
      streaming = true;
      return response;
    }
    let response: UpstreamResponse;
    try {
      response = await transport.post(request);
    } catch (err) {
      throw upstreamError(classify(err), err);
    }
    if (response.status < 200 || response.status > 299) {
      response.body.destroy();
      throw upstreamError('status', new Error(`upstream answered ${response.status}`), response.status);
    }
    if (!upstream.passthrough) return await readJson(response, upstream.max_response_bytes);
    streaming = true;
    return passthrough(response, release);
  } finally {
    if (!streaming) release();
  }
}

/** http:// passthrough through the reader that reuses its buffers and keep-alive connections (passthrough-reader.ts). */
async function passthroughWithoutCopies(request: UpstreamRequest, pool: ConnectionPool, release: Release): Promise<StreamedResponse> {
  let head;
  try {
    head = await passthroughRequest(request, pool);
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

async function readJson(response: UpstreamResponse, maxBytes: number): Promise<unknown> {
  const declared = Number(response.headers['content-length']);
  if (declared > maxBytes) {
    response.body.destroy();
    throw upstreamError('too_large', new Error(`upstream declared ${declared} bytes, over ${maxBytes}`), response.status);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        response.body.destroy();
        throw Object.assign(new Error(`upstream body over ${maxBytes} bytes`), { code: 'ERR_BODY_TOO_LARGE' });
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    throw upstreamError(classify(err), err, response.status);
  }
  const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)).toString('utf8');
  if (text.trim() === '') return null;
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) throw upstreamError('too_deep', new Error(`upstream JSON nested deeper than ${MAX_JSON_DEPTH}`), response.status);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw upstreamError('invalid_json', err, response.status);
  }
}

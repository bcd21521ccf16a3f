import { GatewayError, StreamedResponse, type EndpointCall } from '@tkgate/core';
import type { HttpConfig } from './http-config.js';
import { passthroughRequest } from './passthrough-reader.js';
import type { UpstreamRequest, UpstreamResponse, UpstreamTransport } from './upstream-transport.js';

/** Upstream response headers a passthrough answer carries (SPEC: type, length, disposition). */
const PASSTHROUGH_HEADERS = ['content-type', 'content-length', 'content-disposition'];

type Failure = 'status' | 'timeout' | 'connection' | 'invalid_json' | 'too_large' | 'aborted';

function upstreamError(reason: Failure, cause: unknown, status?: number): GatewayError {
  const details: Record<string, unknown> = { reason };
  if (status !== undefined) details.upstream_status = status;
  return new GatewayError(502, 'upstream_error', 'the upstream did not give a usable answer', { details, cause });
}

function classify(err: unknown): Failure {
  const code = (err as { code?: string; name?: string }).code;
  if (code === 'ETIMEDOUT' || code?.endsWith('_TIMEOUT') || (err as { name?: string }).name === 'TimeoutError') return 'timeout';
  if (code === 'ERR_BODY_TOO_LARGE') return 'too_large';
  if ((err as { name?: string }).name === 'AbortError' || code === 'ERR_ABORTED' || code === 'UND_ERR_ABORTED') return 'aborted';
  return 'connection';
}

/**
 * POSTs the request context as JSON. The upstream hears X-Request-Id and the configured headers and
 * nothing of the client's credentials (no Authorization, no Cookie: the client's headers are not forwarded).
 */
export async function proxy(transport: UpstreamTransport, call: EndpointCall<HttpConfig>): Promise<unknown> {
  const { upstream } = call.config;
  const request: UpstreamRequest = {
    url: upstream.url,
    headers: { ...upstream.headers, 'content-type': 'application/json', accept: upstream.passthrough ? '*/*' : 'application/json', 'x-request-id': call.requestId, 'user-agent': 'tkgate' },
    body: JSON.stringify(call.context),
    timeoutMs: upstream.timeout,
    streamed: upstream.passthrough,
    signal: call.signal,
  };
  if (upstream.passthrough && upstream.url.startsWith('http:')) return passthroughWithoutCopies(request);
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
  if (upstream.passthrough) return passthrough(response);
  return readJson(response, upstream.max_response_bytes);
}

/** http:// passthrough through the reader that reuses one buffer (passthrough-reader.ts). */
async function passthroughWithoutCopies(request: UpstreamRequest): Promise<StreamedResponse> {
  let head;
  try {
    head = await passthroughRequest(request);
  } catch (err) {
    throw upstreamError(classify(err), err);
  }
  if (head.status < 200 || head.status > 299) {
    head.discard();
    throw upstreamError('status', new Error(`upstream answered ${head.status}`), head.status);
  }
  return new StreamedResponse(head.writeBody, pickPassthroughHeaders(head.headers), head.status);
}

function pickPassthroughHeaders(upstreamHeaders: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSTHROUGH_HEADERS) {
    const value = upstreamHeaders[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

function passthrough(response: UpstreamResponse): StreamedResponse {
  return new StreamedResponse(response.body, pickPassthroughHeaders(response.headers), response.status);
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
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw upstreamError('invalid_json', err, response.status);
  }
}

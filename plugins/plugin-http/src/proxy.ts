import {
  GatewayError,
  isSecretReference,
  jsonText,
  StreamedResponse,
  type ChildSpan,
  type EndpointCall,
  type JsonText,
  type SecretReference,
} from '@tkgate/core';
import { UpstreamSpan, upstreamTarget, type SpanTarget } from './upstream-span.js';
import { firstUrl, type HttpConfig } from './http-config.js';
import { acrossTargets, type TargetSet, type TargetSets } from './targets.js';
import { answerOfFailure, upstreamError, UpstreamFailure } from './upstream-failure.js';
import { tlsOf, type UpstreamTls } from './upstream-tls.js';
import type { UpstreamAnswer, UpstreamRequest, UpstreamResponse, UpstreamTransport } from './upstream-transport.js';

/** Upstream response headers a passthrough answer carries (docs/toolkits.md, "type: http": type and disposition; the length apart). */
const PASSTHROUGH_HEADERS = ['content-type', 'content-disposition'];
/** JSON answers nested deeper are refused: whatever walks them recursively (the envelope's stringify) would overflow. */
const MAX_JSON_DEPTH = 64;

/** A transport's failure as the 502 (the context mode's timeout included: its 502 says `timeout`). */
const failed = (err: unknown): GatewayError => answerOfFailure(err);

/** The transports of one plugin instance: JSON calls through one, passthrough downloads through another (per scheme). */
export interface Upstreams {
  json: UpstreamTransport;
  passthrough: UpstreamTransport;
  /** The current value of a header's secret reference (PluginApi.secrets.value). */
  secretValue(reference: SecretReference): string;
  /** The target sets of endpoints with `upstream.targets`. */
  targets: TargetSets;
}

/** What every call of an endpoint sends the same way, made once per endpoint version (its config object). */
interface Fixed {
  headers: Record<string, string>;
  /** Headers whose value is a secret reference: read per call, so a changed secret file is used at once. */
  secretHeaders: Array<[string, SecretReference]>;
  /** The configured headers and TLS material (the endpoint's credentials): with the caller, the key of the connections calls may share. */
  connectionGroup: string;
  /** The upstream as the attributes of the call's span. */
  target: SpanTarget;
  tls: UpstreamTls | undefined;
}
const fixedParts = new WeakMap<HttpConfig['upstream'], Fixed>();
function fixedOf(upstream: HttpConfig['upstream']): Fixed {
  let fixed = fixedParts.get(upstream);
  if (!fixed) {
    const tls = tlsOf(upstream);
    const literal: Record<string, string> = {};
    const secretHeaders: Array<[string, SecretReference]> = [];
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (isSecretReference(value)) secretHeaders.push([name, value]);
      else literal[name] = value;
    }
    // A secret header joins the group by its reference: the group's key never holds a secret's value.
    const credentials = Object.entries(upstream.headers).map(([name, value]) => [name, isSecretReference(value) ? `{secret:${value.secret}}` : value]);
    fixed = {
      tls,
      headers: { ...literal, 'content-type': 'application/json', accept: upstream.passthrough ? '*/*' : 'application/json', 'user-agent': 'tkgate' },
      secretHeaders,
      target: upstreamTarget(firstUrl(upstream)),
      connectionGroup: JSON.stringify([tls?.id ?? '', ...credentials.sort(([a], [b]) => (a!.toLowerCase() < b!.toLowerCase() ? -1 : 1))]),
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
  /** The URL and the timeout of the attempt: with targets, each attempt sets its own. */
  url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  timeoutMs: number;
  readonly streamed: boolean;
  readonly connectionGroup: string;
  readonly caller: number;
  readonly tls: UpstreamTls | undefined;
  readonly idempotent: boolean;

  constructor(
    private readonly call: EndpointCall<HttpConfig>,
    span: ChildSpan,
    secretValue: Upstreams['secretValue'],
  ) {
    const { upstream } = call.config;
    const fixed = fixedOf(upstream);
    this.url = upstream.url ?? '';
    // The trace context is the gateway's own (the upstream call's span), whatever the client sent: every transport sends these headers.
    // Object.assign, not a spread: on Node 20 each property added to (or after) a spread copy gave the object a new
    // map, ~0.5 µs a property (docs/performance.md, "The proxied JSON call").
    const headers: Record<string, string> = Object.assign({}, fixed.headers);
    headers['x-request-id'] = call.requestId;
    headers.traceparent = span.traceparent;
    if (span.tracestate !== undefined) headers.tracestate = span.tracestate;
    for (const [name, reference] of fixed.secretHeaders) headers[name] = secretValue(reference);
    this.headers = headers;
    this.connectionGroup = fixed.connectionGroup;
    // Connections are never shared between users: an answer an upstream sends out of turn can only reach the user it was meant for.
    this.caller = call.callerId;
    this.tls = fixed.tls;
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
 * One call of the request through `send`: to the one URL (tried once more when it failed for want of a
 * connection and the endpoint is idempotent), or across the endpoint's targets.
 */
function attempts<T extends { status: number }>(
  call: EndpointCall<HttpConfig>,
  request: ProxiedRequest,
  set: TargetSet | undefined,
  span: UpstreamSpan,
  send: () => Promise<T>,
): Promise<T> {
  if (set) {
    // A GET (or an idempotent endpoint's call) may be sent again to another target.
    const retrySent = call.method === 'GET' || call.config.upstream.idempotent;
    return acrossTargets(
      set,
      retrySent,
      request.timeoutMs,
      (target, ms) => {
        request.url = target.url;
        request.timeoutMs = ms;
        span.at(target.span);
        return send();
      },
      statusOfAnswer,
    );
  }
  return request.idempotent ? onceMore(send) : send();
}
const statusOfAnswer = (answer: { status: number }) => answer.status;

/**
 * A call that failed for want of a connection before any answer, tried once more: only for an endpoint
 * declared idempotent. Otherwise the request may have reached the upstream already, and a proxy must not
 * repeat a non-idempotent one on its own (RFC 9110 section 9.2.2).
 */
async function onceMore<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (!(err instanceof UpstreamFailure) || err.reason !== 'connection' || err.upstreamStatus !== undefined) throw err;
    return attempt();
  }
}

/** A release function called once, whichever way the body ends. */
export type Release = () => void;

/**
 * POSTs the request context as JSON. The upstream hears X-Request-Id and the configured headers and
 * nothing of the client's credentials (no Authorization, no Cookie: the client's headers are not forwarded).
 * `release` is called once the upstream exchange is over: at once for JSON, when the stream ends for passthrough.
 * Not async: a JSON call is one chain on the transport's promise (each async layer was a promise and its
 * turns per call); a failure before anything is sent is a rejection too, as from an async function.
 */
export function proxy(upstreams: Upstreams, call: EndpointCall<HttpConfig>, releaseGate: Release): Promise<unknown> {
  const { upstream } = call.config;
  const span = new UpstreamSpan(call.trace, fixedOf(upstream).target);
  let request: ProxiedRequest;
  try {
    request = new ProxiedRequest(call, span.child, upstreams.secretValue);
  } catch (err) {
    // A secret that cannot be read now (a vault gone down): nothing was sent; the place goes back to the gate.
    span.failed(err);
    span.end();
    releaseGate();
    return Promise.reject(err);
  }
  // Only an endpoint with targets pays for them.
  const set = upstream.targets ? upstreams.targets.of(call.endpoint, upstream) : undefined;
  if (upstream.passthrough) return proxyPassthrough(upstreams, call, request, set, span, releaseGate);
  let sent: Promise<UpstreamAnswer>;
  try {
    const transport = upstreams.json;
    const maxBytes = upstream.max_response_bytes;
    sent =
      set || request.idempotent ? attempts(call, request, set, span, () => transport.fetchWhole(request, maxBytes)) : transport.fetchWhole(request, maxBytes);
  } catch (err) {
    span.failed(err);
    span.end();
    releaseGate();
    return Promise.reject(err);
  }
  return sent.then(
    (answer) => {
      try {
        return checkedJson(usableAnswer(answer, span));
      } catch (err) {
        throw span.failed(err);
      } finally {
        span.end();
        releaseGate();
      }
    },
    (err: unknown) => {
      const failure = span.failed(failed(err));
      span.end();
      releaseGate();
      throw failure;
    },
  );
}

/** A passthrough call: the answer streamed to the client, the gate released when its body ends. */
async function proxyPassthrough(
  upstreams: Upstreams,
  call: EndpointCall<HttpConfig>,
  request: ProxiedRequest,
  set: TargetSet | undefined,
  span: UpstreamSpan,
  releaseGate: Release,
): Promise<unknown> {
  const release = () => {
    span.end();
    releaseGate();
  };
  let streaming = false;
  try {
    let response: UpstreamResponse;
    try {
      const transport = upstreams.passthrough;
      response = await (set || request.idempotent ? attempts(call, request, set, span, () => transport.post(request)) : transport.post(request));
    } catch (err) {
      throw span.failed(failed(err));
    }
    span.answered(response.status);
    if (response.status < 200 || response.status > 299) {
      response.discard();
      throw span.failed(upstreamError('status', new Error(`upstream answered ${response.status}`), response.status));
    }
    streaming = true;
    return passthrough(response, release);
  } catch (err) {
    throw span.failed(err);
  } finally {
    if (!streaming) release();
  }
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

/** The answer streamed to the client; `release` once its body is over, whichever way. */
function passthrough(response: UpstreamResponse, release: Release): StreamedResponse {
  const headers = passthroughHeaders(response.headers, response.contentLength);
  const body = response.body;
  if (typeof body === 'function') return new StreamedResponse((out) => body(out).finally(release), headers, response.status);
  body.once('close', release);
  return new StreamedResponse(body, headers, response.status);
}

/** The upstream's whole 2xx answer, or the 502 that says why there is none. */
function usableAnswer(answer: UpstreamAnswer, span: UpstreamSpan): UpstreamAnswer {
  span.answered(answer.status);
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

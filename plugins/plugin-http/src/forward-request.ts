import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { GatewayError, StreamedResponse, type ChildSpan, type EndpointCall } from '@tkgate/core';
import { configuredHeaders, type SecretValue } from './configured-headers.js';
import type { HttpConfig } from './http-config.js';
import { acrossTargets, type AttemptFailure, type TargetSets } from './targets.js';
import { neverConnected } from './upstream-failure.js';
import { tlsConnectOptions, tlsOf } from './upstream-tls.js';

/**
 * `upstream.forward: request`: the client's request itself goes to the upstream (its method, the wildcard's rest
 * of the path, the query string as received, the body after client_filter, its headers minus credentials and
 * hop-by-hop ones, plus Tkgate-Context, X-Request-Id, traceparent and X-Forwarded-*), and the upstream's answer
 * comes back as it is, streamed, without the envelope: its 404 is the client's 404. Only no answer (connection
 * failure, 502), a late one (504 upstream_timeout) or a malformed one (502) is the gateway's.
 *
 * Node's own HTTP client, in a module of its own: the answer is streamed to the client with back-pressure
 * whatever its status, and its parser refuses what RFC 9112 calls malformed (both Content-Length and
 * Transfer-Encoding, bare line feeds, obsolete folding) before a byte reaches the client.
 */

/** The methods a forwarding endpoint may list. */
export const FORWARD_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Response headers of one connection only (RFC 9110 7.6.1), never passed on; and the gateway's own request id. */
const NOT_PASSED_BACK = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'x-request-id',
]);
/** Request headers the gateway has dealt with itself: the body is already read, so no 100-continue. */
const NOT_FORWARDED = new Set(['expect', 'content-type']);

/** The parts of an upstream URL a forwarded request is built from, made once per endpoint version. */
interface Target {
  secure: boolean;
  hostname: string;
  port: number;
  host: string;
  /** The URL's path without a trailing slash, the wildcard's rest goes after it. */
  basePath: string;
  /** The URL's own query ('' when none), before the client's. */
  baseQuery: string;
}
/** By URL: every endpoint version's URLs and targets, cleared if it ever grows past MAX_PARSED (reloads). */
const parsed = new Map<string, Target>();
const MAX_PARSED = 4096;
function targetOf(upstreamUrl: string): Target {
  let target = parsed.get(upstreamUrl);
  if (!target) {
    if (parsed.size >= MAX_PARSED) parsed.clear();
    const url = new URL(upstreamUrl);
    const secure = url.protocol === 'https:';
    target = {
      secure,
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
      host: url.host,
      basePath: url.pathname.replace(/\/$/, ''),
      baseQuery: url.search.slice(1),
    };
    parsed.set(upstreamUrl, target);
  }
  return target;
}

/** A `{name}` of the URL's path, as the URL parser keeps it. */
const URL_PARAM = /%7B([A-Za-z_][A-Za-z0-9_]*)%7D/g;

/** The `{name}`s of an upstream URL's path: each must be a parameter of the endpoint's path. */
export function urlParams(url: string): string[] {
  return [...new URL(url).pathname.matchAll(URL_PARAM)].map((match) => match[1]!);
}

/**
 * The path and query the upstream hears: its URL's path with the path parameters put in for its `{name}`s (one
 * segment of [A-Za-z0-9._~-] each, checked at step 4), the rest as received, its URL's query then the client's
 * byte for byte.
 */
function pathOf(target: Target, params: Record<string, unknown> | undefined, rest: string, query: string): string {
  const base = params ? target.basePath.replace(URL_PARAM, (_, name: string) => String(params[name])) : target.basePath;
  const path = rest === '' ? base || '/' : `${base}/${rest}`;
  const joined = [target.baseQuery, query].filter((part) => part !== '').join('&');
  return joined === '' ? path : `${path}?${joined}`;
}

/** The request context without its payload, as base64url JSON: who the caller is, for an upstream that wants to know. */
export function contextHeader(context: Record<string, unknown>, withPayload: boolean): string {
  const { payload, ...rest } = context;
  return Buffer.from(JSON.stringify(withPayload ? { ...rest, payload } : rest)).toString('base64url');
}

/** The upstream's headers the client gets: all but hop-by-hop ones (and those its Connection names) and X-Request-Id. */
function headersBack(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase());
  const back: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !NOT_PASSED_BACK.has(name) && !named.includes(name)) back[name] = value;
  return back;
}

const upstreamError = (reason: string, cause: unknown) =>
  new GatewayError(502, 'upstream_error', 'the upstream did not give a usable answer', { details: { reason }, cause });
const upstreamTimeout = (timeoutMs: number, cause?: Error) =>
  new GatewayError(504, 'upstream_timeout', 'the upstream did not answer in time', { details: { timeout_ms: timeoutMs }, cause });

/** A failed attempt as the balancer sees it (targets.ts). */
function forwardFailure(err: unknown): AttemptFailure {
  const cause = (err as { cause?: unknown }).cause;
  if ((cause as Error | undefined)?.name === 'AbortError') return { outcome: 'aborted', sent: true };
  if (neverConnected(cause)) return { outcome: 'not_sent', sent: false };
  if ((err as GatewayError).status === 504) return { outcome: 'timeout', sent: true };
  if (((err as GatewayError).details as { reason?: string } | undefined)?.reason === 'invalid_response') return { outcome: 'invalid', sent: true };
  return { outcome: 'failed', sent: true };
}

/** Why a request got no answer: Node's parser codes (HPE_*) mean a malformed one. */
function failure(err: NodeJS.ErrnoException): GatewayError {
  return upstreamError(err.code?.startsWith('HPE_') ? 'invalid_response' : 'connection', err);
}

/** An answer with no body to stream: for HEAD, and the statuses that have none. */
const bodiless = (method: string, status: number) => method === 'HEAD' || status === 204 || status === 304 || status < 200;

/** A user's keep-alive connections, one pool per scheme (Node's agents keep TLS credentials apart). */
interface CallerAgents {
  plain: http.Agent;
  secure: https.Agent;
  lastUsed: number;
}

const inUse = (agent: http.Agent) => Object.keys(agent.sockets).length > 0;

/** A user's connections unused this long are closed, so many users that each call rarely hold no sockets. */
const CALLER_IDLE_MS = 30_000;

/**
 * Forwards requests over keep-alive connections of its own, never shared between users: whatever an upstream
 * sends out of turn (a late second answer on a kept connection), it can only reach the user it was meant for.
 */
export class RequestForwarder {
  private readonly agents = new Map<number, CallerAgents>();
  private readonly sweep = setInterval(() => this.closeIdle(Date.now() - CALLER_IDLE_MS), CALLER_IDLE_MS).unref();

  constructor(
    private readonly secretValue: SecretValue,
    private readonly targets: TargetSets,
  ) {}

  close(): void {
    clearInterval(this.sweep);
    for (const agents of this.agents.values()) {
      agents.plain.destroy();
      agents.secure.destroy();
    }
    this.agents.clear();
  }

  private agentsOf(caller: number): CallerAgents {
    let agents = this.agents.get(caller);
    if (!agents) this.agents.set(caller, (agents = { plain: new http.Agent({ keepAlive: true }), secure: new https.Agent({ keepAlive: true }), lastUsed: 0 }));
    agents.lastUsed = Date.now();
    return agents;
  }

  private closeIdle(before: number): void {
    for (const [caller, agents] of this.agents) {
      // A long download keeps its user's agents: only sockets in no request are closed with them.
      if (agents.lastUsed >= before || inUse(agents.plain) || inUse(agents.secure)) continue;
      agents.plain.destroy();
      agents.secure.destroy();
      this.agents.delete(caller);
    }
  }

  /** The upstream's answer as a StreamedResponse; `release` once it is over, whichever way. */
  forward(call: EndpointCall<HttpConfig>, release: () => void): Promise<StreamedResponse> {
    const { upstream } = call.config;
    if (!upstream.targets) return this.send(call, targetOf(upstream.url!), upstream.timeout, release);
    // Across targets: a failed attempt releases nothing; the answer's end, or the last failure, releases the gate.
    const set = this.targets.of(call.endpoint, upstream);
    const retrySent = call.method === 'GET' || call.method === 'HEAD' || call.method === 'OPTIONS' || upstream.idempotent;
    const answered = (ended: boolean) => ended && release();
    return acrossTargets(
      set,
      retrySent,
      upstream.timeout,
      (target, ms) => this.send(call, targetOf(target.url), ms, answered),
      (response) => response.status,
      forwardFailure,
    ).catch((err: unknown) => {
      release();
      throw err;
    });
  }

  /** One attempt on one URL; `done(answered)` once it is over: failed before an answer (false), or its answer ended (true). */
  private send(call: EndpointCall<HttpConfig>, target: Target, timeoutMs: number, done: (answered: boolean) => void): Promise<StreamedResponse> {
    const { upstream } = call.config;
    const incoming = call.incoming;
    const span = call.trace.startSpan(call.method, {
      kind: 'client',
      attributes: { 'http.request.method': call.method, 'server.address': target.hostname, 'server.port': target.port },
    });
    const headers = this.headersOf(call, incoming, target, span);
    let over = false;
    const end = (answered: boolean) => {
      if (over) return;
      over = true;
      span.end();
      done(answered);
    };
    return new Promise<StreamedResponse>((resolve, reject) => {
      const fail = (err: GatewayError) => {
        span.setAttribute('error.type', err.code);
        end(false);
        reject(err);
      };
      const options = {
        method: call.method,
        hostname: target.hostname,
        port: target.port,
        path: pathOf(target, call.context.path_params as Record<string, unknown> | undefined, incoming.pathRest, incoming.query),
        headers,
        ...(target.secure
          ? { agent: this.agentsOf(call.callerId).secure, ...tlsConnectOptions(tlsOf(upstream), target.hostname) }
          : { agent: this.agentsOf(call.callerId).plain }),
      };
      const request = (target.secure ? https : http).request(options);
      let answered = false;
      const stopWatching = call.onClientGone(() => request.destroy(Object.assign(new Error('the client closed the connection'), { name: 'AbortError' })));
      // A socket silent this long, before the answer's head or within its body, ends the exchange.
      request.setTimeout(timeoutMs, () => {
        // Still connecting: the request was never sent (another target may have it).
        const connecting = request.socket?.connecting === true;
        if (!answered) fail(upstreamTimeout(upstream.timeout, connecting ? Object.assign(new Error('connect timed out'), { event: 'connect' }) : undefined));
        request.destroy(new Error(`the upstream was silent for ${timeoutMs} ms`));
      });
      request.once('error', (err: NodeJS.ErrnoException) => {
        stopWatching();
        if (!answered) fail(failure(err));
        else end(true);
      });
      request.once('response', (response: IncomingMessage) => {
        answered = true;
        const status = response.statusCode ?? 502;
        span.setAttribute('http.response.status_code', status);
        response.once('close', () => {
          stopWatching();
          end(true);
        });
        if (bodiless(call.method, status)) response.resume();
        resolve(new StreamedResponse(response, headersBack(response.headers), status));
      });
      request.end(incoming.body?.bytes);
    });
  }

  private headersOf(call: EndpointCall<HttpConfig>, incoming: EndpointCall<HttpConfig>['incoming'], target: Target, span: ChildSpan) {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(incoming.headers)) if (!NOT_FORWARDED.has(name)) headers[name] = value;
    Object.assign(headers, configuredHeaders(call.config.upstream.headers, this.secretValue));
    headers.host = target.host;
    headers['tkgate-context'] = contextHeader(call.context, false);
    headers['x-request-id'] = call.requestId;
    headers.traceparent = span.traceparent;
    if (span.tracestate !== undefined) headers.tracestate = span.tracestate;
    headers['x-forwarded-for'] = incoming.forwarded.for;
    headers['x-forwarded-proto'] = incoming.forwarded.proto;
    headers['x-forwarded-host'] = incoming.forwarded.host;
    if (incoming.body) {
      headers['content-type'] = incoming.body.contentType;
      headers['content-length'] = String(incoming.body.bytes.length);
    }
    return headers;
  }
}

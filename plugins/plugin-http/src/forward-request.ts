import { isSecretReference, StreamedResponse, type ChildSpan, type EndpointCall, type IncomingRequest } from '@tkgate/core';
import { Agent } from 'undici';
import { configuredHeaders, type SecretValue } from './configured-headers.js';
import { ForwardedExchange } from './forwarded-exchange.js';
import type { HttpConfig } from './http-config.js';
import { libraryFailure } from './library-errors.js';
import { acrossTargets, type TargetSets } from './targets.js';
import { answerOfFailure } from './upstream-failure.js';
import { fillPathParams } from './url-template.js';
import { tlsConnectOptions, tlsOf, type UpstreamTls } from './upstream-tls.js';
import { perGroup } from './upstream-transport.js';

/**
 * `upstream.forward: request`: the client's request itself goes to the upstream (its method, the wildcard's rest
 * of the path, the query string as received, the body after client_filter, its headers minus credentials and
 * hop-by-hop ones, plus Tkgate-Context, X-Request-Id, traceparent and X-Forwarded-*), and the upstream's answer
 * comes back as it is, streamed, without the envelope: its 404 is the client's 404. Only no answer (connection
 * failure, 502), a late one (504 upstream_timeout) or a malformed one (502) is the gateway's.
 *
 * Through undici's dispatcher, over kept connections per user and credentials, with a handler of its own
 * (forwarded-exchange.ts) that writes the answer into the client's response with back-pressure; undici's parser
 * refuses what RFC 9112 calls malformed (both Content-Length and Transfer-Encoding, bare line feeds, obsolete
 * folding) before a byte reaches the client.
 */

/** The methods a forwarding endpoint may list. */
export const FORWARD_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Request headers the gateway has dealt with itself: the body is already read, so no 100-continue. */
const NOT_FORWARDED = new Set(['expect', 'content-type']);

/** The parts of an upstream URL a forwarded request is built from, made once per endpoint version. */
interface Target {
  /** Scheme, host and port, as undici's dispatcher takes them. */
  origin: string;
  hostname: string;
  port: number;
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
      origin: url.origin,
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
      basePath: url.pathname.replace(/\/$/, ''),
      baseQuery: url.search.slice(1),
    };
    parsed.set(upstreamUrl, target);
  }
  return target;
}

/**
 * The path and query the upstream hears: its URL's path with the path parameters put in for its `{name}`s (`base`),
 * the rest as received, the client's trailing slash (a directory's URL stays one), its URL's query then the
 * client's byte for byte.
 */
function pathOf(target: Target, base: string, incoming: IncomingRequest): string {
  const { pathRest: rest, query } = incoming;
  let path = rest === '' ? base || '/' : `${base}/${rest}`;
  if (incoming.trailingSlash && !path.endsWith('/')) path += '/';
  const joined = [target.baseQuery, query].filter((part) => part !== '').join('&');
  return joined === '' ? path : `${path}?${joined}`;
}

/** An absolute URL (`scheme://`), a network-path reference (`//host`) or an absolute path: the Locations to look at. */
const ABSOLUTE = /^(?:[A-Za-z][A-Za-z0-9+.-]*:\/\/|\/)/;

/**
 * A `Location` pointing into the upstream's own path (its origin, under the endpoint's URL path `base`) as the
 * gateway's path of the endpoint, so a directory redirect (`/v1/reports` -> `/v1/reports/`) keeps the browser at the
 * gateway; under `base` only for a wildcard endpoint (another path there has no gateway URL). Any other Location
 * (another origin, another path, a relative reference, which resolves alike at the gateway) is passed as it is.
 */
function locationBack(location: string, target: Target, base: string, gatewayPath: string, wildcard: boolean): string {
  if (!ABSOLUTE.test(location)) return location;
  let url: URL;
  try {
    url = new URL(location, target.origin);
  } catch {
    return location;
  }
  if (url.origin !== target.origin) return location;
  const rest =
    url.pathname === base
      ? ''
      : url.pathname === `${base}/`
        ? '/'
        : wildcard && url.pathname.startsWith(`${base}/`)
          ? url.pathname.slice(base.length)
          : undefined;
  return rest === undefined ? location : `${gatewayPath}${rest}${url.search}${url.hash}`;
}

/** RFC 7239's node: an IPv6 address quoted in brackets, "unknown" and IPv4 as they are. */
const forwardedNode = (address: string): string => (address.includes(':') ? `"[${address}]"` : address);

/** The Forwarded header the upstream hears (RFC 7239): one element per address of the chain, the last (this hop) with proto and host. */
function forwardedHeader({ for: chain, proto, host }: IncomingRequest['forwarded']): string {
  const hops = chain.split(',').map((hop) => `for=${forwardedNode(hop.trim())}`);
  hops[hops.length - 1] += `;proto=${proto}${host ? `;host="${host.replace(/["\\]/g, '')}"` : ''}`;
  return hops.join(', ');
}

/** The request context without its payload, as base64url JSON: who the caller is, for an upstream that wants to know. */
export function contextHeader(context: Record<string, unknown>, withPayload: boolean): string {
  const { payload, ...rest } = context;
  return Buffer.from(JSON.stringify(withPayload ? { ...rest, payload } : rest)).toString('base64url');
}

/** The endpoint's credentials, the key of the connections its calls share with the same user's: TLS material, configured headers. */
const groups = new WeakMap<HttpConfig['upstream'], string>();
function connectionGroupOf(upstream: HttpConfig['upstream'], tls: UpstreamTls | undefined): string {
  let group = groups.get(upstream);
  if (group === undefined) {
    // A secret header joins the group by its reference: the key never holds a secret's value.
    const credentials = Object.entries(upstream.headers).map(([name, value]) => [
      name.toLowerCase(),
      isSecretReference(value) ? `{secret:${value.secret}}` : value,
    ]);
    group = JSON.stringify([tls?.id ?? '', ...credentials.sort(([a], [b]) => (a! < b! ? -1 : 1))]);
    groups.set(upstream, group);
  }
  return group;
}

/**
 * Forwards requests over keep-alive connections never shared between users (nor between endpoints with different
 * credentials): whatever an upstream sends out of turn (a late second answer on a kept connection), it can only
 * reach the user it was meant for. undici's agents, one per user and credentials (perGroup), closed gracefully
 * once unused for 30 s; a kept connection closes after 10 s idle.
 */
export class RequestForwarder {
  private readonly agents = perGroup(
    (tls) => new Agent({ keepAliveTimeout: 10_000, connections: 256, pipelining: 1, connect: tlsConnectOptions(tls) }),
    // Closed gracefully: downloads still running finish first.
    (agent) => (void agent.close(), true),
  );

  constructor(
    private readonly secretValue: SecretValue,
    private readonly targets: TargetSets,
  ) {}

  close(): void {
    for (const agent of this.agents.all()) void agent.destroy();
    this.agents.close();
  }

  /** The upstream's answer as a StreamedResponse; `release` once it is over, whichever way. */
  forward(call: EndpointCall<HttpConfig>, release: () => void): Promise<StreamedResponse> {
    const { upstream } = call.config;
    // Attempts fail with the transports' UpstreamFailure (what the balancer reads); the client hears the 502 or 504.
    const answer = (err: unknown) => {
      throw answerOfFailure(err, upstream.timeout);
    };
    // The configured headers' secrets are read once, before any attempt: one that cannot be read now (a vault gone
    // down) is the gateway's own fault, a 500 whose cause is logged, not an upstream's 502; nothing is sent to any
    // target, no target's health suffers, and the place goes back to the gate.
    let configured: Record<string, string>;
    try {
      configured = configuredHeaders(upstream.headers, this.secretValue);
    } catch (err) {
      release();
      return Promise.reject(err);
    }
    if (!upstream.targets) return this.send(call, targetOf(upstream.url!), upstream.timeout, configured, release).catch(answer);
    // Across targets: a failed attempt releases nothing; the answer's end, or the last failure, releases the gate.
    const set = this.targets.of(call.endpoint, upstream);
    const retrySent = call.method === 'GET' || call.method === 'HEAD' || call.method === 'OPTIONS' || upstream.idempotent;
    const answered = (ended: boolean) => ended && release();
    return acrossTargets(
      set,
      retrySent,
      upstream.timeout,
      (target, ms) => this.send(call, targetOf(target.url), ms, configured, answered),
      (response) => response.status,
    ).catch((err: unknown) => {
      release();
      return answer(err);
    });
  }

  /** One attempt on one URL; `done(answered)` once it is over: failed before an answer (false), or its answer ended (true). */
  private send(
    call: EndpointCall<HttpConfig>,
    target: Target,
    timeoutMs: number,
    configured: Record<string, string>,
    done: (answered: boolean) => void,
  ): Promise<StreamedResponse> {
    const { upstream } = call.config;
    const incoming = call.incoming;
    const span = call.trace.startSpan(call.method, {
      kind: 'client',
      attributes: { 'http.request.method': call.method, 'server.address': target.hostname, 'server.port': target.port },
    });
    const base = fillPathParams(target.basePath, call.context.path_params as Record<string, unknown> | undefined);
    const wildcard = call.endpoint.path === '*' || call.endpoint.path.endsWith('/*');
    const tls = tlsOf(upstream);
    const agent = this.agents.of({ connectionGroup: connectionGroupOf(upstream, tls), caller: call.callerId, tls });
    const headers = this.headersOf(call, incoming, configured, span);
    return new Promise<StreamedResponse>((resolve, reject) => {
      let answered = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const exchange = new ForwardedExchange({
        answered(status, headers, body) {
          answered = true;
          if (typeof headers.location === 'string') headers.location = locationBack(headers.location, target, base, incoming.gatewayPath, wildcard);
          span.setAttribute('http.response.status_code', status);
          resolve(new StreamedResponse(body, headers, status));
        },
        failed(err) {
          const failure = libraryFailure(err);
          span.setAttribute('error.type', failure.reason === 'timeout' ? 'upstream_timeout' : 'upstream_error');
          reject(failure);
        },
        over() {
          clearTimeout(connectTimer);
          stopWatching();
          span.end();
          done(answered);
        },
      });
      const stopWatching = call.onClientGone(() => exchange.abort(Object.assign(new Error('the client closed the connection'), { name: 'AbortError' })));
      agent.dispatch(
        {
          origin: target.origin,
          path: pathOf(target, base, incoming),
          method: call.method as 'GET',
          headers,
          body: incoming.body?.bytes ?? null,
          // A silence this long, before the answer's head or within its body, ends the exchange.
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        exchange,
      );
      // No kept connection was free: the wait for one (a connect, or a place) counts against the timeout too.
      if (!exchange.connected)
        connectTimer = setTimeout(() => {
          if (!exchange.connected) exchange.abort(Object.assign(new Error('connect timed out'), { code: 'UND_ERR_CONNECT_TIMEOUT', event: 'connect' }));
        }, timeoutMs);
    });
  }

  private headersOf(call: EndpointCall<HttpConfig>, incoming: EndpointCall<HttpConfig>['incoming'], configured: Record<string, string>, span: ChildSpan) {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(incoming.headers)) if (!NOT_FORWARDED.has(name)) headers[name] = value;
    Object.assign(headers, configured);
    headers['tkgate-context'] = contextHeader(call.context, false);
    headers['x-request-id'] = call.requestId;
    headers.traceparent = span.traceparent;
    if (span.tracestate !== undefined) headers.tracestate = span.tracestate;
    headers['x-forwarded-for'] = incoming.forwarded.for;
    headers['x-forwarded-proto'] = incoming.forwarded.proto;
    headers['x-forwarded-host'] = incoming.forwarded.host;
    // The client's own Forwarded and X-Real-IP never reach the upstream (core leaves them out): the gateway's say the same as X-Forwarded-*.
    headers.forwarded = forwardedHeader(incoming.forwarded);
    headers['x-real-ip'] = incoming.forwarded.client;
    if (incoming.body) {
      headers['content-type'] = incoming.body.contentType;
      headers['content-length'] = String(incoming.body.bytes.length);
    }
    return headers;
  }
}

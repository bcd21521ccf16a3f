import { GatewayError, UPGRADED, type EndpointCall } from '@tkgate/core';
import type { IncomingMessage } from 'node:http';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { contextHeader } from './forward-request.js';
import { configuredHeaders, type SecretValue } from './configured-headers.js';
import { firstUrl, type HttpConfig } from './http-config.js';
import { acrossTargets, type AttemptFailure, type TargetSets } from './targets.js';
import { neverConnected } from './upstream-failure.js';
import { tlsConnectOptions, tlsOf } from './upstream-tls.js';

/**
 * `websocket: true`: the client's upgrade, past authentication and steps 1-8, is relayed to a ws:// or wss://
 * upstream. The upstream is connected first (with Tkgate-Context, payload included, X-Request-Id, traceparent and
 * the client's own subprotocols, never the token one: core took it out), then the client's handshake is completed
 * with the subprotocol the upstream chose. Frames go both ways as they are (text, binary, ping, pong, close code and
 * reason), with back-pressure: a side whose peer has more than HIGH_WATER bytes queued is not read until it drains.
 *
 * The `ws` package speaks the protocol (RFC 6455: framing, masking, fragmentation, UTF-8 checks, the size limit)
 * on both sides; the gateway only relays.
 */

/** Bytes queued towards one side past which the other side is no longer read. */
const HIGH_WATER = 1024 * 1024;
/** Keep-alive pings to both sides. */
const PING_EVERY_MS = 30_000;
/** How often the one sweep of all sockets looks for idle ones (and pings when PING_EVERY_MS has passed). */
const SWEEP_EVERY_MS = 1000;

/** One relayed socket pair, as the shared sweep sees it. */
interface Pair {
  near: WebSocket;
  far: WebSocket;
  idleMs: number;
  /** Date.now() of the last message either way. */
  lastActivity: number;
}

/** The subprotocol the upstream chose, on the client's upgrade request (read by the shared server's handleProtocols). */
const CHOSEN = Symbol('tkgate.websocket.chosen');
type ChosenOn = IncomingMessage & { [CHOSEN]?: string };

/** Close codes a peer may send (RFC 6455 7.4): others (1005 no status, 1006 abnormal) close without a code. */
const sendable = (code: number) => (code >= 1000 && code <= 1014 && ![1004, 1005, 1006].includes(code)) || (code >= 3000 && code <= 4999);

function closeWith(socket: WebSocket, code: number, reason: Buffer | string): void {
  if (socket.readyState === WebSocket.CLOSED || socket.readyState === WebSocket.CLOSING) return;
  if (socket.readyState === WebSocket.CONNECTING) return socket.terminate();
  if (sendable(code)) socket.close(code, reason);
  else socket.close();
}

/** One side's messages, pings and pongs to the other, reading paused while the other side's queue is full. */
function relay(from: WebSocket, to: WebSocket, activity: () => void): void {
  from.on('message', (data: RawData, isBinary: boolean) => {
    activity();
    if (to.readyState !== WebSocket.OPEN) return;
    to.send(data, { binary: isBinary }, () => {
      if (to.bufferedAmount < HIGH_WATER && from.isPaused) from.resume();
    });
    if (to.bufferedAmount >= HIGH_WATER) from.pause();
  });
  from.on('ping', (data: Buffer) => to.readyState === WebSocket.OPEN && to.ping(data));
  from.on('pong', (data: Buffer) => to.readyState === WebSocket.OPEN && to.pong(data));
  from.on('close', (code: number, reason: Buffer) => closeWith(to, code, reason));
  from.on('error', () => closeWith(to, 1011, 'the other side failed'));
}

/** The upstream URL: a `{name}` of its path is the path parameter of that name (as for forward: request). */
function upstreamUrl(url: string, params: Record<string, unknown> | undefined): string {
  return params ? url.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => String(params[name])) : url;
}

/** A failed handshake as the balancer sees it: a 5xx answer, no connection, a timeout. */
function handshakeFailure(err: unknown): AttemptFailure {
  const cause = (err as { cause?: { name?: string; status?: number } }).cause;
  if (cause?.name === 'AbortError') return { outcome: 'aborted', sent: true };
  if (neverConnected(cause)) return { outcome: 'not_sent', sent: false };
  if ((err as GatewayError).status === 504) return { outcome: 'timeout', sent: true };
  // An answer other than 101 is an answer: not retried, and only a 5xx counts against the target.
  if (cause?.status !== undefined) return { outcome: cause.status >= 500 ? 'status_5xx' : 'invalid', sent: true };
  return { outcome: 'failed', sent: true };
}

export class WebSocketRelay {
  private readonly open = new Set<Pair>();
  /** One handshake server per max_message_bytes value (not one per socket): ws keeps the limit per server. */
  private readonly servers = new Map<number, WebSocketServer>();
  /** One sweep for every socket (not a timer per socket), running while any is open. */
  private sweeper: NodeJS.Timeout | undefined;
  private lastPing = Date.now();

  constructor(
    private readonly secretValue: SecretValue,
    private readonly targets: TargetSets,
  ) {}

  /** The gateway stops: every relayed socket ends. */
  close(): void {
    for (const pair of this.open) pair.near.terminate();
  }

  private serverFor(maxBytes: number): WebSocketServer {
    let server = this.servers.get(maxBytes);
    if (!server) {
      server = new WebSocketServer({
        noServer: true,
        autoPong: false,
        clientTracking: false,
        perMessageDeflate: false,
        maxPayload: maxBytes,
        // The client gets the subprotocol the upstream chose (never the token one, which core removed).
        handleProtocols: (offers, req: ChosenOn) => (req[CHOSEN] && offers.has(req[CHOSEN]) ? req[CHOSEN] : false),
      });
      this.servers.set(maxBytes, server);
    }
    return server;
  }

  /** Closes idle pairs with 1001 and, every PING_EVERY_MS, pings both sides of every pair. */
  private sweep(): void {
    const now = Date.now();
    const ping = now - this.lastPing >= PING_EVERY_MS;
    if (ping) this.lastPing = now;
    for (const pair of this.open) {
      if (now - pair.lastActivity >= pair.idleMs) {
        closeWith(pair.near, 1001, 'idle');
        closeWith(pair.far, 1001, 'idle');
      } else if (ping) {
        if (pair.near.readyState === WebSocket.OPEN) pair.near.ping();
        if (pair.far.readyState === WebSocket.OPEN) pair.far.ping();
      }
    }
  }

  async relay(call: EndpointCall<HttpConfig>): Promise<typeof UPGRADED> {
    const upgrade = call.upgrade;
    if (!upgrade) throw new GatewayError(426, 'upgrade_required', 'this endpoint is a WebSocket: connect with Upgrade: websocket');
    const { upstream, max_message_bytes: maxBytes, idle_timeout: idleMs } = call.config;
    const offered = upgrade.request.headers['sec-websocket-protocol'];
    const protocols = offered ? offered.split(',').map((protocol) => protocol.trim()) : [];
    const span = call.trace.startSpan('GET', {
      kind: 'client',
      attributes: { 'http.request.method': 'GET', 'url.scheme': new URL(firstUrl(upstream)).protocol },
    });
    const headers: Record<string, string> = {
      ...configuredHeaders(upstream.headers, this.secretValue),
      'tkgate-context': contextHeader(call.context, true),
      'x-request-id': call.requestId,
      traceparent: span.traceparent,
    };
    if (span.tracestate !== undefined) headers.tracestate = span.tracestate;
    const params = call.context.path_params as Record<string, unknown> | undefined;
    const open = (url: string, timeoutMs: number) => this.connect(call, upstreamUrl(url, params), protocols, headers, timeoutMs);
    let far: WebSocket;
    try {
      // An upgrade is a GET: a handshake that got no answer may go to another target too.
      far = upstream.targets
        ? await acrossTargets(
            this.targets.of(call.endpoint, upstream),
            true,
            upstream.timeout,
            (target, ms) => open(target.url, ms),
            () => 101,
            handshakeFailure,
          )
        : await open(upstream.url!, upstream.timeout);
    } catch (err) {
      span.end(err);
      throw err;
    }
    far.removeAllListeners('error');
    const near = await new Promise<WebSocket>((resolve) => {
      (upgrade.request as ChosenOn)[CHOSEN] = far.protocol;
      this.serverFor(maxBytes).handleUpgrade(upgrade.request, upgrade.socket, upgrade.head, resolve);
    });
    this.watch(near, far, idleMs, () => span.end());
    // The session or key this socket was opened with ended (anywhere): both sides close with 4401.
    upgrade.onCredentialEnd(() => closeWith(near, 4401, 'session_ended'));
    return UPGRADED;
  }

  /** The upstream's socket, open; or the GatewayError that says why not (the socket terminated). */
  private async connect(
    call: EndpointCall<HttpConfig>,
    url: string,
    protocols: string[],
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<WebSocket> {
    const { upstream, max_message_bytes: maxBytes } = call.config;
    const secure = url.startsWith('wss:');
    const far = new WebSocket(url, protocols, {
      headers,
      maxPayload: maxBytes,
      autoPong: false,
      perMessageDeflate: false,
      handshakeTimeout: timeoutMs,
      ...(secure ? tlsConnectOptions(tlsOf(upstream), new URL(url).hostname) : {}),
    });
    try {
      await new Promise<void>((resolve, reject) => {
        far.once('open', resolve);
        far.once('error', reject);
        far.once('unexpected-response', (_req, res) => {
          res.resume();
          reject(Object.assign(new Error(`the upstream answered the handshake with ${res.statusCode}`), { status: res.statusCode }));
        });
        call.onClientGone(() => reject(Object.assign(new Error('the client closed the connection'), { name: 'AbortError' })));
      });
    } catch (err) {
      far.terminate();
      const timedOut = /timed out/i.test((err as Error).message);
      if (timedOut) throw new GatewayError(504, 'upstream_timeout', 'the upstream did not answer in time', { cause: err });
      throw new GatewayError(502, 'upstream_error', 'the upstream did not take the WebSocket', {
        details: { reason: 'connection', ...((err as { status?: number }).status ? { upstream_status: (err as { status?: number }).status } : {}) },
        cause: err,
      });
    }
    return far;
  }

  /** Relays both ways until either side closes; the shared sweep sees to idle time and keep-alive pings. */
  private watch(near: WebSocket, far: WebSocket, idleMs: number, ended: () => void): void {
    const pair: Pair = { near, far, idleMs, lastActivity: Date.now() };
    this.open.add(pair);
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_EVERY_MS).unref();
    const activity = () => (pair.lastActivity = Date.now());
    relay(near, far, activity);
    relay(far, near, activity);
    near.once('close', () => {
      this.open.delete(pair);
      if (this.open.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
      ended();
    });
  }
}

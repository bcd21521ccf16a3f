import { GatewayError, UPGRADED, type ChildSpan, type EndpointCall } from '@tkgate/core';
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

/**
 * One side of a relayed pair, knowing its pair: the relay's listeners are the same functions for every socket (they
 * find the other side through `this`), not closures per socket (docs/performance.md, "Idle WebSockets").
 */
class RelayedSocket extends WebSocket {
  pair: Pair | undefined = undefined;
}

/** One relayed socket pair: what the shared sweep and the listeners need, and the upstream call's span. */
class Pair {
  /** Date.now() of the last message either way. */
  lastActivity = Date.now();

  constructor(
    readonly near: RelayedSocket,
    readonly far: RelayedSocket,
    readonly idleMs: number,
    readonly span: ChildSpan,
    readonly relay: WebSocketRelay,
  ) {}

  peerOf(socket: WebSocket): RelayedSocket {
    return socket === this.near ? this.far : this.near;
  }
}

/** The pair of a socket the relay listens to (ws types listeners' `this` as its own WebSocket). */
const pairOf = (socket: WebSocket): Pair => (socket as RelayedSocket).pair!;

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

/** A message to the other side, reading paused while the other side's queue is full. */
function relayMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
  const pair = pairOf(this);
  pair.lastActivity = Date.now();
  const to = pair.peerOf(this);
  if (to.readyState !== WebSocket.OPEN) return;
  to.send(data, { binary: isBinary }, () => {
    if (to.bufferedAmount < HIGH_WATER && this.isPaused) this.resume();
  });
  if (to.bufferedAmount >= HIGH_WATER) this.pause();
}

function relayPing(this: WebSocket, data: Buffer): void {
  const to = pairOf(this).peerOf(this);
  if (to.readyState === WebSocket.OPEN) to.ping(data);
}

function relayPong(this: WebSocket, data: Buffer): void {
  const to = pairOf(this).peerOf(this);
  if (to.readyState === WebSocket.OPEN) to.pong(data);
}

/** Either side's close closes the other with its code and reason; the client side's close ends the pair. */
function relayClose(this: WebSocket, code: number, reason: Buffer): void {
  const pair = pairOf(this);
  closeWith(pair.peerOf(this), code, reason);
  if (this === pair.near) pair.relay.ended(pair);
}

function relayError(this: WebSocket): void {
  closeWith(pairOf(this).peerOf(this), 1011, 'the other side failed');
}

/** The socket's end with its credential: its one closure, holding nothing but the socket. */
const closeOnCredentialEnd = (near: WebSocket) => () => closeWith(near, 4401, 'session_ended');

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
        WebSocket: RelayedSocket,
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
    let far: RelayedSocket;
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
    const near = await new Promise<RelayedSocket>((resolve) => {
      (upgrade.request as ChosenOn)[CHOSEN] = far.protocol;
      this.serverFor(maxBytes).handleUpgrade(upgrade.request, upgrade.socket, upgrade.head, (socket) => resolve(socket as RelayedSocket));
    });
    this.watch(new Pair(near, far, idleMs, span, this));
    // The session or key this socket was opened with ended (anywhere): both sides close with 4401.
    upgrade.onCredentialEnd(closeOnCredentialEnd(near));
    return UPGRADED;
  }

  /** The upstream's socket, open; or the GatewayError that says why not (the socket terminated). */
  private async connect(
    call: EndpointCall<HttpConfig>,
    url: string,
    protocols: string[],
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<RelayedSocket> {
    const { upstream, max_message_bytes: maxBytes } = call.config;
    const secure = url.startsWith('wss:');
    const far = new RelayedSocket(url, protocols, {
      headers,
      maxPayload: maxBytes,
      autoPong: false,
      perMessageDeflate: false,
      ...(secure ? tlsConnectOptions(tlsOf(upstream), new URL(url).hostname) : {}),
    });
    let timer: NodeJS.Timeout | undefined;
    let stopWatchingClient: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        far.once('open', resolve);
        far.once('error', reject);
        far.once('unexpected-response', (_req, res) => {
          res.resume();
          reject(Object.assign(new Error(`the upstream answered the handshake with ${res.statusCode}`), { status: res.statusCode }));
        });
        // Its own timer, not ws's handshakeTimeout: that one stays on the open socket (a cleared Timeout and its bound
        // function for the socket's life).
        timer = setTimeout(() => reject(Object.assign(new Error('the upstream did not answer the handshake in time'), { timedOut: true })), timeoutMs);
        stopWatchingClient = call.onClientGone(() => reject(Object.assign(new Error('the client closed the connection'), { name: 'AbortError' })));
      });
    } catch (err) {
      far.terminate();
      if ((err as { timedOut?: boolean }).timedOut) throw new GatewayError(504, 'upstream_timeout', 'the upstream did not answer in time', { cause: err });
      throw new GatewayError(502, 'upstream_error', 'the upstream did not take the WebSocket', {
        details: { reason: 'connection', ...((err as { status?: number }).status ? { upstream_status: (err as { status?: number }).status } : {}) },
        cause: err,
      });
    } finally {
      clearTimeout(timer);
      stopWatchingClient?.();
    }
    // The handshake's listeners (and the promise they hold) do not stay for the socket's life.
    far.removeAllListeners('error');
    far.removeAllListeners('unexpected-response');
    return far;
  }

  /** Relays both ways until either side closes; the shared sweep sees to idle time and keep-alive pings. */
  private watch(pair: Pair): void {
    this.open.add(pair);
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_EVERY_MS).unref();
    for (const socket of [pair.near, pair.far]) {
      socket.pair = pair;
      socket.on('message', relayMessage);
      socket.on('ping', relayPing);
      socket.on('pong', relayPong);
      socket.on('close', relayClose);
      socket.on('error', relayError);
    }
  }

  /** The client's side closed: the pair leaves the sweep, and the upstream call's span ends. */
  ended(pair: Pair): void {
    this.open.delete(pair);
    if (this.open.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
    pair.span.end();
  }
}

import { GatewayError, UPGRADED, type ChildSpan, type EndpointCall } from '@tkgate/core';
import type { IncomingMessage } from 'node:http';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { contextHeader } from './forward-request.js';
import { configuredHeaders, type SecretValue } from './configured-headers.js';
import { firstUrl, type HttpConfig } from './http-config.js';
import { libraryFailure } from './library-errors.js';
import { acrossTargets, type TargetSets } from './targets.js';
import { answerOfFailure, UpstreamFailure } from './upstream-failure.js';
import { fillPathParams } from './url-template.js';
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

/** The subprotocol each client's handshake answers with, by its upgrade request (read by the shared server's handleProtocols). */
const chosen = new WeakMap<IncomingMessage, string>();

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

/** ws's error for a message over maxPayload: the other side hears 1009 (message too big) as this side did. */
const TOO_BIG = 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH';

function relayError(this: WebSocket, err: Error & { code?: string }): void {
  const peer = pairOf(this).peerOf(this);
  if (err.code === TOO_BIG) closeWith(peer, 1009, 'message too big');
  else closeWith(peer, 1011, 'the other side failed');
}

/** The socket's end with its credential: its one closure, holding nothing but the socket. */
const closeOnCredentialEnd = (near: WebSocket) => () => closeWith(near, 4401, 'session_ended');

/** The upstream URL: a `{name}` of its path is the path parameter of that name (as for forward: request). */
const upstreamUrl = (url: string, params: Record<string, unknown> | undefined): string => fillPathParams(new URL(url).href, params);

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
        // The client gets the subprotocol the upstream chose, or the token one when it offered nothing else.
        handleProtocols: (offers, req: IncomingMessage) => {
          const protocol = chosen.get(req);
          return protocol !== undefined && offers.has(protocol) ? protocol : false;
        },
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
          )
        : await open(upstream.url!, upstream.timeout);
    } catch (err) {
      // The handshake's failures in the one vocabulary: a 504 with timeout_ms, else the 502 (with the status of an
      // answer other than 101).
      const answer = answerOfFailure(err, upstream.timeout);
      span.end(answer);
      throw answer;
    }
    let near: RelayedSocket | undefined;
    const protocol = far.protocol || upgrade.tokenProtocol;
    if (protocol) {
      chosen.set(upgrade.request, protocol);
      // ws's handshake reads the offers from the request: the token one (taken out by core) is put back only now, when
      // the upstream is connected and only the client's own answer is left to write.
      if (protocol === upgrade.tokenProtocol) upgrade.request.headers['sec-websocket-protocol'] = protocol;
    }
    // Synchronous (no verifyClient): the pair is watched before any frame of the client's is read. ws calls back only
    // with a handshake it completed; it answers a malformed one (400) and destroys the socket itself.
    this.serverFor(maxBytes).handleUpgrade(upgrade.request, upgrade.socket, upgrade.head, (socket) => (near = socket as RelayedSocket));
    if (!near) {
      far.terminate();
      const answer = answerOfFailure(new UpstreamFailure('aborted', 'the client side of the handshake failed'));
      span.end(answer);
      throw answer;
    }
    this.watch(new Pair(near, far, idleMs, span, this));
    // What the upstream sent before the client's side was open was held (its socket paused at the open): relayed now.
    far.resume();
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
        // Paused in the open's listener itself, before the socket's first read: a greeting of an upstream that speaks
        // first (VNC, some chat servers), even one that came with the 101, waits in the socket (bounded by its buffer and
        // TCP's window) until the client's side is open.
        far.once('open', () => (far.pause(), resolve()));
        far.once('error', reject);
        // An answer other than 101 is an answer: not retried, and only a 5xx counts against the target.
        far.once('unexpected-response', (_req, res) => {
          res.resume();
          const status = res.statusCode ?? 0;
          reject(new UpstreamFailure('connection', `the upstream answered the handshake with ${status}`, { upstreamStatus: status }));
        });
        // Its own timer, not ws's handshakeTimeout: that one stays on the open socket (a cleared Timeout and its bound
        // function for the socket's life).
        timer = setTimeout(() => reject(new UpstreamFailure('timeout', 'the upstream did not answer the handshake in time')), timeoutMs);
        stopWatchingClient = call.onClientGone(() => reject(new UpstreamFailure('aborted', 'the client closed the connection')));
      });
    } catch (err) {
      far.terminate();
      throw libraryFailure(err);
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

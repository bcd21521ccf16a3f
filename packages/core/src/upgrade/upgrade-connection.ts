import { ServerResponse, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { UpgradeCall } from '../plugins/plugin-api.js';

/**
 * A WebSocket upgrade's connection, on its request: the socket, what was read past the head, and the response that
 * stands for the handshake's HTTP answer until an endpoint type takes the connection over. It is the plugin's
 * `call.upgrade` itself (UpgradeCall), so what the type says of the socket (its close at the credential's end) is
 * kept here, on the one object the socket's life is decided on (upgrade/upgrades.ts).
 */
export class UpgradeConnection implements UpgradeCall {
  /** Whether an endpoint type took the connection over (answered the handshake on the socket itself). */
  takenOver = false;
  private closeAtCredentialEnd: (() => void) | undefined = undefined;

  constructor(
    readonly request: IncomingMessage,
    readonly socket: Duplex,
    readonly head: Buffer,
    private readonly response: ServerResponse,
    readonly tokenProtocol: string | undefined,
  ) {}

  onCredentialEnd(close: () => void): void {
    this.closeAtCredentialEnd = close;
  }

  /** What ends the socket when the session or key it was opened with ends: the type's close (4401), else a destroy. */
  credentialEnd(): () => void {
    const socket = this.socket;
    return this.closeAtCredentialEnd ?? (() => socket.destroy());
  }

  /**
   * The endpoint type took the connection over: the response is done and lets go of the socket, so that nothing of
   * the request (its Koa context, request and response objects, their listeners) lives as long as the socket does.
   * detachSocket drops Node's watch of the socket; 'finish' ends Koa's and the access log's watch of the response
   * (which then watches the socket, ops/request-log.ts); endWithResponse no longer finds a socket to end.
   */
  takeOver(): void {
    this.takenOver = true;
    this.response.detachSocket(this.socket as Parameters<ServerResponse['detachSocket']>[0]);
    this.response.emit('finish');
  }
}

/** One listener for every socket, not a closure per socket: a socket that failed is done. */
function destroyOnError(this: Duplex): void {
  this.destroy();
}

/** An HTTP answer to an upgrade (401, 404, ...) ends its connection; a response whose socket was taken over has none. */
function endWithResponse(this: ServerResponse): void {
  this.socket?.end();
}

/** The upgrade connection of each request that asked for one (a WeakMap: the entry goes with its request). */
const connections = new WeakMap<IncomingMessage, UpgradeConnection>();

/** The upgrade connection of a request that asked for one, else undefined. */
export const upgradeOf = (req: IncomingMessage): UpgradeConnection | undefined => connections.get(req);

/** The subprotocol that carries a browser's token (browsers cannot set Authorization on a WebSocket). */
const BEARER_PROTOCOL = /^tkgate\.bearer\.(.+)$/;

/**
 * A browser's token in `Sec-WebSocket-Protocol: tkgate.bearer.<token>, chat` becomes its Authorization (unless it
 * sent one) and leaves the list, so that nothing after this (the upstream, the endpoint's checks) sees it. Returns
 * the token's protocol when it was the only offer: the handshake's answer must then name it, or a browser fails the
 * handshake (RFC 6455 4.1: the answer's subprotocol is one of the offers); it goes back to the client only.
 */
function takeBrowserToken(req: IncomingMessage): string | undefined {
  const offered = req.headers['sec-websocket-protocol'];
  if (offered === undefined) return undefined;
  const protocols = offered.split(',').map((protocol) => protocol.trim());
  const bearer = protocols.find((protocol) => BEARER_PROTOCOL.test(protocol));
  if (bearer === undefined) return undefined;
  req.headers.authorization ??= `Bearer ${BEARER_PROTOCOL.exec(bearer)![1]}`;
  const rest = protocols.filter((protocol) => !BEARER_PROTOCOL.test(protocol));
  if (rest.length > 0) {
    req.headers['sec-websocket-protocol'] = rest.join(', ');
    return undefined;
  }
  delete req.headers['sec-websocket-protocol'];
  return bearer;
}

/**
 * Upgrade requests (WebSockets) go through the same Koa app as every request: Node hands them to the server's
 * 'upgrade' event with the raw socket, so they are given an ordinary response on that socket and the app's
 * handler. The toolkit pipeline authenticates them and runs steps 1-8 as for any request; an endpoint type that
 * takes the connection over (step 9) completes the handshake itself (call.upgrade); any other answer (401, 403,
 * 404, 400, ...) is written as plain HTTP, and the connection closes after it. A connection taken over keeps nothing
 * of its request (UpgradeConnection.takeOver).
 */
export function serveUpgrades(server: Server, handler: RequestListener): void {
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', destroyOnError);
    const tokenProtocol = takeBrowserToken(req);
    const res = new ServerResponse(req);
    connections.set(req, new UpgradeConnection(req, socket, head, res, tokenProtocol));
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Parameters<ServerResponse['assignSocket']>[0]);
    res.on('finish', endWithResponse);
    handler(req, res);
  });
}

import { ServerResponse, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';

/** A WebSocket upgrade's connection, on its request: the socket and what was read past the head. */
export interface UpgradeConnection {
  socket: Duplex;
  head: Buffer;
}

const UPGRADE = Symbol('tkgate.upgrade');

/** The upgrade connection of a request that asked for one, else undefined. */
export const upgradeOf = (req: IncomingMessage): UpgradeConnection | undefined => (req as IncomingMessage & { [UPGRADE]?: UpgradeConnection })[UPGRADE];

/** The subprotocol that carries a browser's token (browsers cannot set Authorization on a WebSocket). */
const BEARER_PROTOCOL = /^tkgate\.bearer\.(.+)$/;

/**
 * A browser's token in `Sec-WebSocket-Protocol: tkgate.bearer.<token>, chat` becomes its Authorization (unless it
 * sent one) and leaves the list, so that nothing after this (the upstream, the answer's echo) ever sees it.
 */
function takeBrowserToken(req: IncomingMessage): void {
  const offered = req.headers['sec-websocket-protocol'];
  if (offered === undefined) return;
  const protocols = offered.split(',').map((protocol) => protocol.trim());
  const bearer = protocols.find((protocol) => BEARER_PROTOCOL.test(protocol));
  if (bearer === undefined) return;
  req.headers.authorization ??= `Bearer ${BEARER_PROTOCOL.exec(bearer)![1]}`;
  const rest = protocols.filter((protocol) => !BEARER_PROTOCOL.test(protocol));
  if (rest.length > 0) req.headers['sec-websocket-protocol'] = rest.join(', ');
  else delete req.headers['sec-websocket-protocol'];
}

/**
 * Upgrade requests (WebSockets) go through the same Koa app as every request: Node hands them to the server's
 * 'upgrade' event with the raw socket, so they are given an ordinary response on that socket and the app's
 * handler. The toolkit pipeline authenticates them and runs steps 1-8 as for any request; an endpoint type that
 * takes the connection over (step 9) completes the handshake itself (call.upgrade); any other answer (401, 403,
 * 404, 400, ...) is written as plain HTTP, and the connection closes after it.
 */
export function serveUpgrades(server: Server, handler: RequestListener): void {
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    takeBrowserToken(req);
    (req as IncomingMessage & { [UPGRADE]?: UpgradeConnection })[UPGRADE] = { socket, head };
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Parameters<ServerResponse['assignSocket']>[0]);
    res.once('finish', () => socket.end());
    handler(req, res);
  });
}

import type { Authenticated } from '../auth/authenticate.js';
import type { IncomingMessage } from 'node:http';
import { OpenSockets, type SocketPlace } from './open-sockets.js';
import type { StreamCredential, StreamEnds } from './stream-ends.js';
import { upgradeOf, type UpgradeConnection } from './upgrade-connection.js';

/**
 * A WebSocket's life in core, from the pipeline's one hand-off (`Upgrades.admit`, step 9) to its close:
 *
 * - upgrade-connection.ts: the server's 'upgrade' event, the browser's token subprotocol, the connection on its
 *   request (the plugin's call.upgrade), and the response letting go of the socket when a type takes it over;
 * - open-sockets.ts: websocket.max_per_user, a place per socket taken before the type runs;
 * - stream-ends.ts: the socket closed (4401) when the session or key it was opened with ends;
 * - the access line at the socket's close: ops/request-log.ts, which watches the connection's takeover.
 */

/** What step 9 hands over for an upgrade: the connection, the caller, and the credential it was opened with. */
export interface UpgradeHandOff {
  request: IncomingMessage;
  state: Authenticated;
}

/** An upgrade admitted to its endpoint type: its connection and its place, settled once the type has answered. */
export class AdmittedUpgrade {
  constructor(
    readonly connection: UpgradeConnection,
    private readonly place: SocketPlace,
    private readonly credential: StreamCredential | undefined,
    private readonly streamEnds: StreamEnds,
  ) {}

  /**
   * The type answered: `tookOver` when it completed the handshake on the socket (the response lets go of it, the
   * place is kept while it is open, and the credential's end closes it); else the place goes back and the answer is
   * ordinary HTTP.
   */
  settle(tookOver: boolean): void {
    const { connection, place, credential } = this;
    const socket = connection.socket;
    if (!tookOver || socket.destroyed) return place.release();
    connection.takeOver();
    place.keepWhileOpen(socket);
    // The close to call, not the connection: the connection holds the request, which must not live as long as the socket.
    if (credential) this.streamEnds.watch(credential, connection.credentialEnd(), socket);
  }
}

export class Upgrades {
  private readonly sockets: OpenSockets;

  constructor(
    maxPerUser: number,
    readonly streamEnds: StreamEnds,
  ) {
    this.sockets = new OpenSockets(maxPerUser);
  }

  /** The request's upgrade admitted (429 too_many_sockets past websocket.max_per_user), or undefined: not an upgrade. */
  admit({ request, state }: UpgradeHandOff): AdmittedUpgrade | undefined {
    const connection = upgradeOf(request);
    if (!connection) return undefined;
    return new AdmittedUpgrade(connection, this.sockets.reserve(state.caller.id), credentialOf(state), this.streamEnds);
  }
}

/** The credential a stream was opened with (a session's or an API key's hash); none for another kind of caller. */
export function credentialOf(state: Partial<Authenticated>): StreamCredential | undefined {
  if (state.session) return { kind: 'session', hash: state.session.tokenHash };
  if (state.apiKey) return { kind: 'api_key', hash: state.apiKey.keyHash };
  return undefined;
}

import type { Duplex } from 'node:stream';
import { GatewayError } from '../errors.js';

/**
 * A user's place among the WebSockets open on this instance, taken before the endpoint type runs: kept while the
 * socket is open if the type took the connection over (`keepWhileOpen`), given back otherwise (`release`).
 */
export class SocketPlace {
  private held = true;

  constructor(
    private readonly sockets: OpenSockets,
    readonly userId: number,
  ) {}

  release(): void {
    if (!this.held) return;
    this.held = false;
    this.sockets.left(this.userId);
  }

  /** The place goes back when `socket` closes (at once if it already has). */
  keepWhileOpen(socket: Duplex): void {
    if (socket.destroyed) return this.release();
    // `on`, not `once`: a socket closes once, and once's wrapper would stay for the socket's life.
    socket.on('close', () => this.release());
  }
}

/**
 * The WebSockets open on this instance, counted per user (websocket.max_per_user): an upgrade takes a place
 * before its endpoint type runs, so that two handshakes at once cannot both squeeze past the limit.
 */
export class OpenSockets {
  private readonly byUser = new Map<number, number>();

  constructor(private readonly maxPerUser: number) {}

  /** A place for `userId`'s upgrade, or 429 too_many_sockets. */
  reserve(userId: number): SocketPlace {
    const open = this.byUser.get(userId) ?? 0;
    if (open >= this.maxPerUser) {
      throw new GatewayError(429, 'too_many_sockets', `at most ${this.maxPerUser} WebSockets per user may be open on one instance`, {
        details: { max_per_user: this.maxPerUser },
      });
    }
    this.byUser.set(userId, open + 1);
    return new SocketPlace(this, userId);
  }

  /** A place given back (SocketPlace.release). */
  left(userId: number): void {
    const left = (this.byUser.get(userId) ?? 1) - 1;
    if (left > 0) this.byUser.set(userId, left);
    else this.byUser.delete(userId);
  }
}

import type { Duplex } from 'node:stream';
import { GatewayError } from '../errors.js';

/**
 * The WebSockets open on this instance, counted per user (websocket.max_per_user): an upgrade takes a place
 * before its endpoint type runs (so two handshakes at once cannot both squeeze past the limit), keeps it while
 * its socket is open if the type took the connection over, and gives it back otherwise.
 */
export class OpenSockets {
  private readonly byUser = new Map<number, number>();

  constructor(private readonly maxPerUser: number) {}

  /** A place for `userId`'s upgrade, or 429 too_many_sockets; returns what to call with the socket taken over (or with nothing). */
  reserve(userId: number): (taken: Duplex | undefined) => void {
    const open = this.byUser.get(userId) ?? 0;
    if (open >= this.maxPerUser) {
      throw new GatewayError(429, 'too_many_sockets', `at most ${this.maxPerUser} WebSockets per user may be open on one instance`, {
        details: { max_per_user: this.maxPerUser },
      });
    }
    this.byUser.set(userId, open + 1);
    const release = () => {
      const left = (this.byUser.get(userId) ?? 1) - 1;
      if (left > 0) this.byUser.set(userId, left);
      else this.byUser.delete(userId);
    };
    return (taken) => {
      if (!taken || taken.destroyed) return release();
      // `on`, not `once`: a socket closes once, and once's wrapper would stay for the socket's life.
      taken.on('close', release);
    };
  }
}

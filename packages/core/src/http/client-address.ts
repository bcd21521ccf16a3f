import type { IncomingMessage } from 'node:http';

/**
 * The caller's address. Behind a trusted proxy it is the last X-Forwarded-For entry: the one that proxy
 * appended itself, which a client cannot forge (earlier entries are whatever the client sent).
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = String(req.headers['x-forwarded-for'] ?? '')
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean);
    const nearest = forwarded.at(-1);
    if (nearest) return nearest;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

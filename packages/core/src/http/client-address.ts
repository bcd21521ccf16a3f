import type { GatewayContext } from './context.js';

/**
 * The caller's address. Behind a trusted proxy it is the last X-Forwarded-For entry: the one that proxy
 * appended itself, which a client cannot forge (earlier entries are whatever the client sent).
 */
export function clientAddress(ctx: GatewayContext, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = ctx
      .get('x-forwarded-for')
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean);
    const nearest = forwarded.at(-1);
    if (nearest) return nearest;
  }
  return ctx.req.socket.remoteAddress ?? 'unknown';
}

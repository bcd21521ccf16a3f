import { randomUUID } from 'node:crypto';
import type { GatewayContext, GatewayMiddleware } from './context.js';

/** Gives the request an id, in the X-Request-Id response header and in the envelope. */
export function giveRequestId(ctx: GatewayContext): void {
  const id = randomUUID();
  ctx.state.requestId = id;
  // Straight to Node, as Koa's ctx.set would (no header is sent this early).
  ctx.res.setHeader('X-Request-Id', id);
}

/** Gives every request an id (giveRequestId), as Koa middleware. */
export const assignRequestId: GatewayMiddleware = (ctx, next) => {
  giveRequestId(ctx);
  return next();
};

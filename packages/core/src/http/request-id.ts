import { randomUUID } from 'node:crypto';
import type { GatewayContext, GatewayMiddleware } from './context.js';

/** Gives the request an id, in the X-Request-Id response header and in the envelope. */
export function giveRequestId(ctx: GatewayContext): void {
  ctx.state.requestId = randomUUID();
  ctx.set('X-Request-Id', ctx.state.requestId);
}

/** Gives every request an id (giveRequestId), as Koa middleware. */
export const assignRequestId: GatewayMiddleware = (ctx, next) => {
  giveRequestId(ctx);
  return next();
};

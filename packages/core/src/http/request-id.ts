import { randomUUID } from 'node:crypto';
import type { GatewayMiddleware } from './context.js';

/** Gives every request an id, in the X-Request-Id response header and in the envelope. */
export const assignRequestId: GatewayMiddleware = (ctx, next) => {
  const id = randomUUID();
  ctx.state.requestId = id;
  // Straight to Node, as Koa's ctx.set would (no header is sent this early).
  ctx.res.setHeader('X-Request-Id', id);
  return next();
};

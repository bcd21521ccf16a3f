import { randomUUID } from 'node:crypto';
import type { GatewayMiddleware } from './context.js';

/** Gives every request an id, in the X-Request-Id response header and in the envelope. */
export const assignRequestId: GatewayMiddleware = (ctx, next) => {
  ctx.state.requestId = randomUUID();
  ctx.set('X-Request-Id', ctx.state.requestId);
  return next();
};

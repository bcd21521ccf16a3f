import { randomUUID } from 'node:crypto';
import type { Tracing } from '../tracing/request-trace.js';
import type { GatewayMiddleware } from './context.js';

/**
 * Gives every request an id, in the X-Request-Id response header and in the envelope, and its trace
 * (tracing/tracing.ts): the caller's traceparent continued, or a new trace. One middleware for both: each
 * one more in the stack is a dispatch every request pays.
 */
export function assignRequestId(tracing: Tracing): GatewayMiddleware {
  return (ctx, next) => {
    const id = randomUUID();
    ctx.state.requestId = id;
    ctx.state.trace = tracing.begin(ctx.req.headers, id, ctx.method);
    // Straight to Node, as Koa's ctx.set would (no header is sent this early).
    ctx.res.setHeader('X-Request-Id', id);
    return next();
  };
}

import type { GatewayMiddleware } from './context.js';
import { asPayloadObject, readPayloadBody } from './payload-body.js';

/**
 * The auth endpoints' body: a JSON object of at most server.max_body_bytes (413 past it), arrived within
 * server.body_timeout (408 past it); empty is {}.
 */
export function readJsonObjectBody(limitBytes: number, timeoutMs: number): GatewayMiddleware {
  return async (ctx, next) => {
    const limits = { endpointMax: undefined, serverMax: limitBytes, allowedContentTypes: ['application/json'], timeoutMs };
    const { body } = await readPayloadBody(ctx, limits);
    ctx.request.body = asPayloadObject(body) as typeof ctx.request.body;
    await next();
  };
}

import type { GatewayMiddleware } from './context.js';
import { asPayloadObject, readPayloadBody } from './payload-body.js';

/** The auth endpoints' body: a JSON object of at most server.max_body_bytes (413 past it); empty is {}. */
export function readJsonObjectBody(limitBytes: number): GatewayMiddleware {
  return async (ctx, next) => {
    const { body } = await readPayloadBody(ctx, { endpointMax: undefined, serverMax: limitBytes, allowedContentTypes: ['application/json'] });
    ctx.request.body = asPayloadObject(body) as typeof ctx.request.body;
    await next();
  };
}

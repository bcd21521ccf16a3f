import type { GatewayContext } from './context.js';

/** The success envelope of SPEC section 4: every non-passthrough answer goes through here. */
export function sendData(ctx: GatewayContext, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = { success: true, request_id: ctx.state.requestId, endpoint: ctx.path, data };
}

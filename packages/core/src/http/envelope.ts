import { jsonString } from '../json/json-string.js';
import { isJsonText } from '../json/json-text.js';
import type { GatewayContext } from './context.js';

/**
 * The success envelope (README.md, "The auth API"): every non-passthrough answer goes through here. Checked JSON
 * text (an upstream's answer, see json-text.ts) is spliced in as it is, never parsed and serialised again.
 */
export function sendData(ctx: GatewayContext, data: unknown, status = 200): void {
  ctx.status = status;
  if (isJsonText(data)) {
    // Straight to Node, as Koa's ctx.set would, without its delegate: this runs for every JSON answer.
    if (!ctx.res.headersSent) ctx.res.setHeader('Content-Type', 'application/json; charset=utf-8');
    ctx.body = successText(ctx.state.requestId, ctx.path, data.text);
    return;
  }
  ctx.body = { success: true, request_id: ctx.state.requestId, endpoint: ctx.path, data };
}

/** The success envelope as text, around data that is JSON text already (checked, or made by us). */
export function successText(requestId: string, endpoint: string, dataText: string): string {
  return `{"success":true,"request_id":${jsonString(requestId)},"endpoint":${jsonString(endpoint)},"data":${dataText}}`;
}

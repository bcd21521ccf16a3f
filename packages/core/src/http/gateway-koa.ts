import Koa from 'koa';
import type { GatewayContext, GatewayState } from './context.js';
import { respond, type BodyStreamWatch } from './respond.js';

type ComposedStack = (ctx: GatewayContext) => Promise<unknown>;

/**
 * Koa's Application with a cheaper handleRequest: Koa's own, less its `on-finished` watch of every
 * response. That watch hands a response that ends with a socket error to `ctx.onerror`, which (the headers
 * sent or the socket gone) can only emit the app's `error` event; this gateway is `silent`, listens to no
 * such event, and its access log (ops/request-log.ts) watches each response's `close` already, booking a
 * cut response as 499. The watch (an AsyncResource and four listeners added and removed for every response)
 * was most of what the one request path cost over the old direct answers (docs/performance.md, "One request
 * path through Koa"). The context, the middleware
 * stack, koa-compose and the rest stay Koa's; `respond` is Koa's respond, which Koa does not export.
 * test/unit/gateway-koa.test.ts fails if a Koa release stops calling handleRequest.
 */
export class GatewayKoa extends Koa<GatewayState> {
  /** Who answers for a body stream that fails before its first byte (http/respond.ts); none: the response is cut. */
  watchBodyStream: BodyStreamWatch | undefined;

  handleRequest(ctx: GatewayContext, stack: ComposedStack): Promise<void> {
    ctx.res.statusCode = 404;
    // Koa's `.then(respond).catch(onerror)` in one `then`: an error of the stack or of respond reaches
    // ctx.onerror as in Koa's, with one promise (and its reaction) fewer per request.
    const onerror = (err: Error) => ctx.onerror(err);
    return stack(ctx).then(() => {
      try {
        respond(ctx, this.watchBodyStream);
      } catch (err) {
        onerror(err as Error);
      }
    }, onerror);
  }
}

import type { Database } from '../db/connect.js';
import type { GatewayContext, GatewayMiddleware } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { StreamedResponse, type EndpointCall } from '../plugins/plugin-api.js';

/** Request headers a plugin never sees: credentials of the client, and hop-by-hop headers. */
const WITHHELD_HEADERS = new Set([
  'authorization', 'cookie', 'proxy-authorization', 'host', 'connection', 'keep-alive', 'transfer-encoding',
  'content-length', 'te', 'trailer', 'upgrade', 'proxy-connection',
]);

function forwardableHeaders(ctx: GatewayContext): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(ctx.request.headers)) {
    if (!WITHHELD_HEADERS.has(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** Aborts when the client closes the connection before the response is complete. */
function clientGone(ctx: GatewayContext): AbortSignal {
  const controller = new AbortController();
  const abort = () => controller.abort(new Error('the client closed the connection'));
  if (ctx.res.destroyed || ctx.req.socket.destroyed) abort();
  else ctx.res.once('close', () => ctx.res.writableFinished || abort());
  return controller.signal;
}

/**
 * What the plugin gets. `signal` and `headers` are made on first use: most endpoints read neither, and
 * creating an AbortSignal measured ~4% of an internal endpoint's CPU.
 */
function endpointCall(ctx: GatewayContext, db: Database, log: Logger): EndpointCall<unknown> {
  const endpoint = ctx.state.endpoint!;
  let signal: AbortSignal | undefined;
  let headers: Record<string, string> | undefined;
  return {
    config: endpoint.typeConfig,
    context: ctx.state.requestContext!,
    requestId: ctx.state.requestId,
    get headers() {
      return (headers ??= forwardableHeaders(ctx));
    },
    get signal() {
      return (signal ??= clientGone(ctx));
    },
    db,
    log,
    endpoint: { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint },
  };
}

/**
 * Step 9: the endpoint type's plugin runs the request. Data goes out in the success envelope; a
 * StreamedResponse goes out as its own bytes and headers; a thrown GatewayError keeps its status and code.
 */
export function executeStep(db: Database, log: Logger, metrics: GatewayMetrics): GatewayMiddleware {
  return async (ctx) => {
    const endpoint = ctx.state.endpoint!;
    const started = performance.now();
    let result: unknown;
    try {
      result = await endpoint.type.execute(endpointCall(ctx, db, log));
    } finally {
      metrics.upstream(endpoint.toolkit, endpoint.path, (performance.now() - started) / 1000);
    }
    if (result instanceof StreamedResponse) {
      ctx.status = result.status;
      for (const [name, value] of Object.entries(result.headers)) ctx.set(name, value);
      if (typeof result.body !== 'function') {
        ctx.body = result.body;
        return;
      }
      // The plugin writes the body itself; once bytes are out, a failure can only cut the connection.
      ctx.respond = false;
      try {
        await result.body(ctx.res);
        ctx.res.end();
      } catch (err) {
        // A client that leaves mid-download is routine, not a fault of the gateway or the upstream.
        if (ctx.res.destroyed || ctx.req.socket.destroyed) log.info('client left during a streamed response', { request_id: ctx.state.requestId, path: ctx.path });
        else log.error('streamed response cut', { request_id: ctx.state.requestId, path: ctx.path, err });
        ctx.res.destroy();
      }
      return;
    }
    sendData(ctx, result);
  };
}

import { internalError } from '../errors.js';
import type { GatewayContext } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import { endOfTurn } from '../http/respond-at-turn-end.js';
import { headersProblem } from '../header-rules.js';
import type { Logger } from '../log.js';
import { isReply, StreamedResponse, UPGRADED } from '../plugins/plugin-api.js';
import type { ExecutingState } from './pipeline-state.js';

/**
 * What a plugin's result becomes: data in the success envelope (`undefined` as `null`), with the status and
 * headers of a `reply`; a StreamedResponse as its own bytes and headers.
 */
export function sendAnswer(ctx: GatewayContext<ExecutingState>, result: unknown, log: Logger): void | Promise<void> {
  if (result instanceof StreamedResponse) return sendStream(ctx, result, log);
  if (result === UPGRADED) {
    // The plugin answered the handshake on the socket itself: Koa writes nothing more (step 9 had the response let
    // go of the socket: upgrade/upgrades.ts).
    ctx.respond = false;
    return;
  }
  if (isReply(result)) return sendReply(ctx, result.status, result.headers, result.data);
  sendData(ctx, result ?? null);
}

/** 2xx with a body: 204 and 205 have none, and the envelope is one. */
const isEnvelopeStatus = (status: unknown): boolean =>
  typeof status === 'number' && Number.isInteger(status) && status >= 200 && status <= 299 && status !== 204 && status !== 205;

function sendReply(ctx: GatewayContext<ExecutingState>, status: number, headers: Record<string, string>, data: unknown): void {
  const problem = isEnvelopeStatus(status) ? headersProblem(headers) : `status ${JSON.stringify(status)} is not 200-299 (204 and 205 excepted)`;
  if (problem) throw internalError(new Error(`plugin ${ctx.state.endpoint.type.plugin} replied badly: ${problem}`));
  for (const [name, value] of Object.entries(headers)) ctx.set(name, value);
  sendData(ctx, data ?? null, status);
}

/**
 * A streamed response is watched for its close by a fixed set of listeners: the access log, the plugin's
 * client-gone watch, this module's log line, and the pipeline that writes it (node's pipe and end-of-stream
 * put up to seven on the destination). Eleven in all for a library's stream, one more than Node's default
 * limit, which then warns of a leak (MaxListenersExceededWarning) on every download though none is leaking.
 */
const STREAMED_RESPONSE_LISTENERS = 32;

async function sendStream(ctx: GatewayContext<ExecutingState>, result: StreamedResponse, log: Logger): Promise<void> {
  ctx.res.setMaxListeners(Math.max(ctx.res.getMaxListeners(), STREAMED_RESPONSE_LISTENERS));
  ctx.status = result.status;
  for (const [name, value] of Object.entries(result.headers)) ctx.set(name, value);
  const fields = () => ({ request_id: ctx.state.requestId, path: ctx.path, plugin: ctx.state.endpoint.type.plugin });
  if (typeof result.body !== 'function') {
    const body = result.body;
    // Koa pipes the stream and destroys it when the response closes; a client that leaves mid-download is
    // routine (an info line, as for a body writer), a body that failed is Koa's error to log.
    let failed = false;
    body.once('error', () => (failed = true));
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished && !failed) log.info('client left during a streamed response', fields());
    });
    ctx.body = body;
    return;
  }
  // The plugin writes the body itself; once bytes are out, a failure can only cut the connection.
  ctx.respond = false;
  // Past an announced Content-Length, Node would send the extra bytes, which the client reads as the start
  // of the next answer on the connection; strict, the write fails and the connection is cut instead.
  ctx.res.strictContentLength = true;
  try {
    // Handed over at the end of the turn, as Koa's answers are (http/respond-at-turn-end.ts): a small answer the
    // plugin holds whole by then goes out with its head back to back with the turn's others, not on its own wake-up.
    await endOfTurn();
    await result.body(ctx.res);
    ctx.res.end();
  } catch (err) {
    // A client that leaves mid-download is routine, not a fault of the gateway or the upstream.
    if (ctx.res.destroyed || ctx.req.socket.destroyed) log.info('client left during a streamed response', fields());
    else log.error('streamed response cut', { ...fields(), err });
    ctx.res.destroy();
  }
}

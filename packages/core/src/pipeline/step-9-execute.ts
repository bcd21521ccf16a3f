import type { Database } from '../db/connect.js';
import { asGatewayError, internalError } from '../errors.js';
import { clientAddress } from '../http/client-address.js';
import type { GatewayContext } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import { headersProblem } from '../http/header-rules.js';
import { scopedLogger, type Logger } from '../log.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { RegisteredType } from '../plugins/endpoint-types.js';
import { isReply, StreamedResponse, type EndpointCall, type EndpointIdentity, type EnvelopedReply, type RequestContext } from '../plugins/plugin-api.js';
import type { PipelineStep } from './pipeline-step.js';

/** Request headers a plugin never sees: credentials of the client, and hop-by-hop headers. */
const WITHHELD_HEADERS = new Set([
  'authorization',
  'cookie',
  'proxy-authorization',
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
]);

function forwardableHeaders(ctx: GatewayContext): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(ctx.request.headers)) {
    if (!WITHHELD_HEADERS.has(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

const NOTHING_TO_STOP = () => undefined;

/** Runs `listener` once if the client closes the connection before the response is complete. */
function watchClientGone(ctx: GatewayContext, listener: () => void): () => void {
  if (ctx.res.destroyed || ctx.req.socket.destroyed) {
    listener();
    return NOTHING_TO_STOP;
  }
  const onClose = () => ctx.res.writableFinished || listener();
  ctx.res.once('close', onClose);
  return () => ctx.res.off('close', onClose);
}

/** Aborts when the client closes the connection before the response is complete. */
function clientGone(ctx: GatewayContext): AbortSignal {
  const controller = new AbortController();
  watchClientGone(ctx, () => controller.abort(new Error('the client closed the connection')));
  return controller.signal;
}

export interface ExecuteServices {
  db: Database;
  log: Logger;
  /** server.trust_proxy: the client address is the last X-Forwarded-For entry. */
  trustProxy: boolean;
  /** tkgate_upstream_duration_seconds: how long each endpoint's type took to answer. */
  metrics: GatewayMetrics;
}

/**
 * What the plugin gets. `signal`, `headers`, `clientAddress` and `log` are made on first use: most
 * endpoints read none of them, and creating an AbortSignal measured ~4% of an internal endpoint's CPU.
 * A class, so the getters live on its prototype instead of being new closures on every request.
 */
class GatewayEndpointCall implements EndpointCall<unknown> {
  readonly config: unknown;
  readonly context: RequestContext;
  readonly requestId: string;
  readonly method: string;
  readonly db: Database;
  readonly endpoint: EndpointIdentity;
  private madeSignal?: AbortSignal;
  private madeHeaders?: Record<string, string>;
  private madeLog?: Logger;

  constructor(
    private readonly ctx: GatewayContext,
    private readonly services: ExecuteServices,
  ) {
    const endpoint = ctx.state.endpoint!;
    this.config = endpoint.typeConfig;
    this.context = ctx.state.requestContext!;
    this.requestId = ctx.state.requestId;
    this.method = ctx.method;
    this.db = services.db;
    this.endpoint = { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint };
  }

  get clientAddress(): string {
    return clientAddress(this.ctx.req, this.services.trustProxy);
  }

  get headers(): Record<string, string> {
    return (this.madeHeaders ??= forwardableHeaders(this.ctx));
  }

  get signal(): AbortSignal {
    return (this.madeSignal ??= clientGone(this.ctx));
  }

  /** An arrow property, not a method: plugins pass it on unbound (`whenClientGone: call.onClientGone`). */
  readonly onClientGone = (listener: () => void): (() => void) => watchClientGone(this.ctx, listener);

  get log(): Logger {
    const { endpoint, requestId } = this;
    return (this.madeLog ??= scopedLogger(this.services.log, {
      plugin: this.ctx.state.endpoint!.type.plugin,
      request_id: requestId,
      toolkit: endpoint.toolkit,
      endpoint: endpoint.path,
    }));
  }
}

/** 2xx with a body: 204 and 205 have none, and the envelope is one. */
const isEnvelopeStatus = (status: unknown): boolean =>
  typeof status === 'number' && Number.isInteger(status) && status >= 200 && status <= 299 && status !== 204 && status !== 205;

function sendReply(ctx: GatewayContext, answer: EnvelopedReply): void {
  const problem = isEnvelopeStatus(answer.status)
    ? headersProblem(answer.headers)
    : `status ${JSON.stringify(answer.status)} is not 200-299 (204 and 205 excepted)`;
  if (problem) throw internalError(new Error(`plugin ${ctx.state.endpoint!.type.plugin} replied badly: ${problem}`));
  for (const [name, value] of Object.entries(answer.headers)) ctx.set(name, value);
  sendData(ctx, answer.data ?? null, answer.status);
}

/**
 * Step 9: the endpoint type's plugin runs the request. Data goes out in the success envelope (`undefined`
 * as `null`), with the status and headers of a `reply`; a StreamedResponse goes out as its own bytes and
 * headers; a thrown GatewayError keeps its status and code.
 */
export function executeStep(s: ExecuteServices): PipelineStep {
  const undeclared = new Set<string>();
  /** A code no one declared still reaches the client; the log says so once per plugin and code. */
  const noteUndeclared = (type: RegisteredType, thrown: unknown) => {
    const error = asGatewayError(thrown);
    const key = `${type.plugin}\0${error?.code}`;
    if (!error || type.knowsErrorCode(error.code) || undeclared.has(key)) return;
    undeclared.add(key);
    s.log.warn('undeclared error code', { plugin: type.plugin, code: error.code, status: error.status, hint: 'declare it with api.declareErrors' });
  };
  return async (ctx) => {
    const endpoint = ctx.state.endpoint!;
    const type = endpoint.type;
    const started = performance.now();
    let result: unknown;
    try {
      result = await type.execute(new GatewayEndpointCall(ctx, s));
    } catch (thrown) {
      noteUndeclared(type, thrown);
      throw thrown;
    } finally {
      s.metrics.upstream(endpoint.toolkit, endpoint.path, (performance.now() - started) / 1000);
    }
    if (result instanceof StreamedResponse) return sendStream(ctx, result, s.log);
    if (isReply(result)) return sendReply(ctx, result);
    sendData(ctx, result ?? null);
  };
}

async function sendStream(ctx: GatewayContext, result: StreamedResponse, log: Logger): Promise<void> {
  ctx.status = result.status;
  for (const [name, value] of Object.entries(result.headers)) ctx.set(name, value);
  if (typeof result.body !== 'function') {
    ctx.body = result.body;
    return;
  }
  // The plugin writes the body itself; once bytes are out, a failure can only cut the connection.
  ctx.respond = false;
  // Past an announced Content-Length, Node would send the extra bytes, which the client reads as the start
  // of the next answer on the connection; strict, the write fails and the connection is cut instead.
  ctx.res.strictContentLength = true;
  try {
    await result.body(ctx.res);
    ctx.res.end();
  } catch (err) {
    const fields = { request_id: ctx.state.requestId, path: ctx.path, plugin: ctx.state.endpoint!.type.plugin };
    // A client that leaves mid-download is routine, not a fault of the gateway or the upstream.
    if (ctx.res.destroyed || ctx.req.socket.destroyed) log.info('client left during a streamed response', fields);
    else log.error('streamed response cut', { ...fields, err });
    ctx.res.destroy();
  }
}

/**
 * Per request, once the response is done: one access-log line (log.access) and the request metrics.
 * Labels and fields never hold a raw URL beyond the path, a query string, a body or a token.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GatewayContext, GatewayMiddleware } from '../http/context.js';
import { clientAddress } from '../http/client-address.js';
import { upgradeOf } from '../upgrade/upgrade-connection.js';
import { jsonString } from '../json/json-string.js';
import { JsonMembers, type Logger } from '../log.js';
import type { RequestTrace } from '../tracing/request-trace.js';
import type { GatewayMetrics } from './metrics.js';

export interface RequestLogOptions {
  log: Logger;
  access: boolean;
  metrics: GatewayMetrics;
  trustProxy: boolean;
}

/** What is known of a finished request. */
export interface FinishedRequest {
  method: string;
  /** The caller's address, or the request to read it from (only when the line is written: log.access may be off). */
  client: string | IncomingMessage;
  path: string;
  route: string;
  status: number;
  seconds: number;
  bytes: number;
  /** A connection taken over: what the client sent over it (the access line's `bytes_received`); undefined for any other. */
  bytesReceived: number | undefined;
  requestId: string | undefined;
  userId: number | undefined;
  /** The request's trace: its id goes in the access line, its server span ends here. */
  trace: RequestTrace | undefined;
}

/** Counts a finished request in the metrics and writes its access line (when log.access is on). */
export type RequestRecorder = (finished: FinishedRequest) => void;

export function requestRecorder({ log, access, metrics, trustProxy }: RequestLogOptions): RequestRecorder {
  return (finished) => {
    metrics.request(finished.route, finished.status, finished.seconds);
    finished.trace?.finish(finished.route, finished.status, finished.userId);
    if (!access) return;
    const client = typeof finished.client === 'string' ? finished.client : clientAddress(finished.client, trustProxy);
    log.info('request', new JsonMembers(accessMembers(finished, client)));
  };
}

/**
 * The access line's fields (docs/operating.md, "Logs": method, path, route, status, duration_ms, bytes, request_id, trace_id, client, and
 * user_id once known), written as JSON by hand: one line per request (log.ts, JsonMembers).
 */
function accessMembers({ method, path, route, status, seconds, bytes, bytesReceived, requestId, userId, trace }: FinishedRequest, client: string): string {
  let text = `${requestHead(method, path, route)}"status":${status},"duration_ms":${milliseconds(seconds)},"bytes":${bytes}`;
  if (bytesReceived !== undefined) text += `,"bytes_received":${bytesReceived}`;
  if (requestId !== undefined) text += `,"request_id":${jsonString(requestId)}`;
  // 32 hex digits: nothing to escape.
  if (trace !== undefined) text += `,"trace_id":"${trace.traceId}"`;
  text += `,"client":${jsonString(client)}`;
  if (userId !== undefined) text += `,"user_id":${userId}`;
  return text;
}

/** Per route (a set the configuration bounds): the last method and path logged on it, and their members' text. */
const requestHeads = new Map<string, { method: string; path: string; text: string }>();

/**
 * `"method":…,"path":…,"route":…,` as one string, kept per route while its method and path repeat (most routes
 * have one path): built and escaped anew, it was the line's most concatenations and escape checks
 * (docs/performance.md, "The access line").
 */
function requestHead(method: string, path: string, route: string): string {
  const known = requestHeads.get(route);
  if (known !== undefined && known.path === path && known.method === method) return known.text;
  const text = `"method":${jsonString(method)},"path":${jsonString(path)},"route":${jsonString(route)},`;
  if (known !== undefined) {
    known.method = method;
    known.path = path;
    known.text = text;
  } else requestHeads.set(route, { method, path, text });
  return text;
}

/** Milliseconds to the microsecond, as a JSON number ("2.017"). */
function milliseconds(seconds: number): string {
  const micros = Math.round(seconds * 1e6);
  const fraction = micros % 1000;
  return `${(micros - fraction) / 1000}.${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}`;
}

/**
 * The route's template: the name of the fixed route the router matched (`auth/login`, `healthz`:
 * http/routes.ts), or what a pattern route named (`tk/app/notes/list`), else `other` (a pattern route that
 * named nothing live, or no route): a set bounded by the configuration, whatever the URLs.
 */
function routeOf(ctx: GatewayContext): string {
  return ctx.state.route ?? 'other';
}

/**
 * Body bytes: the Content-Length of a response sent whole, else (a stream without one, or a response cut
 * before its end) what the socket wrote for this response past its head (`_header`, Node's head as sent,
 * which logging middleware such as morgan read too).
 */
function bytesSent(ctx: GatewayContext, socketBytesAtStart: number): number {
  const length = Number(ctx.res.getHeader('content-length'));
  if (Number.isFinite(length) && ctx.res.writableFinished) return length;
  const head = (ctx.res as { _header?: string | null })._header?.length ?? 0;
  return Math.max(0, (ctx.req.socket?.bytesWritten ?? socketBytesAtStart) - socketBytesAtStart - head);
}

/** Records the request once its response has closed (the access line and the metrics). */
export function watchRequest(ctx: GatewayContext, record: RequestRecorder, trustProxy: boolean): void {
  const started = process.hrtime.bigint();
  const socketBytesAtStart = ctx.req.socket?.bytesWritten ?? 0;
  // The peer's address, read now: net.Socket keeps it once read, and a socket destroyed unread has none ("unknown").
  void ctx.req.socket?.remoteAddress;
  // `on`, not `once`: a response closes once, and once's wrapper and removal cost every request.
  ctx.res.on('close', () => {
    record({
      method: ctx.method,
      client: ctx.req,
      path: ctx.path,
      route: routeOf(ctx),
      // A response cut before it was complete is logged with its status as sent, like nginx's 499 cases.
      status: ctx.res.headersSent ? ctx.res.statusCode : 499,
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
      bytes: bytesSent(ctx, socketBytesAtStart),
      // Always present (undefined but for a connection taken over): one shape of record, no spread per request.
      bytesReceived: undefined,
      requestId: ctx.state.requestId,
      userId: ctx.state.caller?.id,
      trace: ctx.state.trace,
    });
  });
  // A WebSocket's handshake: answered in HTTP (401, 404, ...), it is logged as above; taken over, its response lets
  // go of the socket (upgrade/upgrade-connection.ts), finishes and never closes, and the line is written at the
  // socket's close instead.
  const connection = upgradeOf(ctx.req);
  if (connection) {
    ctx.res.once('finish', () => {
      if (connection.takenOver)
        watchTakenOver(connection.socket, new TakenOverRequest(ctx, clientAddress(ctx.req, trustProxy), started, socketBytesAtStart, record));
    });
  }
}

/** The access line of each socket taken over, until its close (a WeakMap: nothing stays with a socket gone). */
const takenOverLines = new WeakMap<Duplex, TakenOverRequest>();

function watchTakenOver(socket: Duplex, line: TakenOverRequest): void {
  takenOverLines.set(socket, line);
  socket.on('close', recordTakenOver);
}

/**
 * What the access line of a connection taken over (a WebSocket) needs at the socket's close, copied at the
 * handshake: the socket outlives its request, and keeping the Koa context (the request, response and headers
 * objects, the pipeline's state) for the socket's life cost more than the two `ws` sockets (docs/performance.md,
 * "Idle WebSockets (scenario 16)").
 */
class TakenOverRequest {
  readonly method: string;
  readonly path: string;
  readonly route: string;
  readonly requestId: string | undefined;
  readonly userId: number | undefined;
  readonly trace: RequestTrace | undefined;

  constructor(
    ctx: GatewayContext,
    readonly client: string,
    readonly started: bigint,
    readonly socketBytesAtStart: number,
    readonly record: RequestRecorder,
  ) {
    this.method = ctx.method;
    this.path = ctx.path;
    this.route = routeOf(ctx);
    this.requestId = ctx.state.requestId;
    this.userId = ctx.state.caller?.id;
    this.trace = ctx.state.trace;
  }
}
/** One 'close' listener for every socket taken over (not a closure per socket): its access line and metrics. */
function recordTakenOver(this: Duplex): void {
  const taken = takenOverLines.get(this);
  if (!taken) return;
  takenOverLines.delete(this);
  const socket = this as Duplex & { bytesWritten?: number; bytesRead?: number };
  taken.record({
    method: taken.method,
    client: taken.client,
    path: taken.path,
    route: taken.route,
    // Logged when it closes, as the 101 it was answered with; bytes are the socket's, the handshake's answer included.
    status: 101,
    seconds: Number(process.hrtime.bigint() - taken.started) / 1e9,
    bytes: Math.max(0, (socket.bytesWritten ?? taken.socketBytesAtStart) - taken.socketBytesAtStart),
    bytesReceived: socket.bytesRead ?? 0,
    requestId: taken.requestId,
    userId: taken.userId,
    trace: taken.trace,
  });
}

/** watchRequest as the outermost Koa middleware. */
export function requestLog(options: RequestLogOptions): GatewayMiddleware {
  const record = requestRecorder(options);
  // Not async: it only listens for the end of the response.
  return (ctx, next) => {
    watchRequest(ctx, record, options.trustProxy);
    return next();
  };
}

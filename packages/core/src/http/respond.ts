import { Readable, Stream, pipeline } from 'node:stream';
import type { GatewayContext } from './context.js';

/** Statuses whose answers have no body (Koa's `statuses.empty`). */
const EMPTY_STATUSES = new Set([204, 205, 304]);

/**
 * Writes the answer Koa's middleware left in the context: Koa's `respond` (koa/lib/application.js, which
 * Koa keeps private), for GatewayKoa's handleRequest. The same rules in the same order: `ctx.respond =
 * false` leaves the response alone, a bodiless status or HEAD ends it without a body, no body sends the
 * status message, a Buffer or string is sent as it is, a Blob, web ReadableStream, Response or Node stream
 * is piped, anything else is JSON. A stream someone `watch`es for is piped so that its failure before the
 * first byte can still be answered (app.ts: a plugin middleware's stream, in the error envelope).
 */
/**
 * Who answers for a body stream that fails before its first byte, if anyone: given the body, a function that
 * answers (and returns true) or declines; undefined leaves the stream to Koa's rule (the response is cut).
 */
export type BodyStreamWatch = (ctx: GatewayContext, body: object) => ((err: Error) => boolean) | undefined;

export function respond(ctx: GatewayContext, watch?: BodyStreamWatch): void {
  if (ctx.respond === false) return;
  const res = ctx.res;
  if (!ctx.writable) {
    res.end();
    return;
  }
  let body: unknown = ctx.body;
  const code = ctx.status;
  if (EMPTY_STATUSES.has(code)) {
    ctx.body = null;
    res.end();
    return;
  }
  if (ctx.method === 'HEAD') {
    if (!res.headersSent && !res.hasHeader('Content-Length')) {
      const { length } = ctx.response;
      if (Number.isInteger(length)) ctx.length = length;
    }
    res.end();
    return;
  }
  if (body === null || body === undefined) {
    if ((ctx.response as { _explicitNullBody?: boolean })._explicitNullBody) {
      ctx.response.remove('Content-Type');
      ctx.response.remove('Transfer-Encoding');
      ctx.length = 0;
      res.end();
      return;
    }
    const text = ctx.req.httpVersionMajor >= 2 ? String(code) : ctx.message || String(code);
    if (!res.headersSent) {
      ctx.type = 'text';
      ctx.length = Buffer.byteLength(text);
    }
    res.end(text);
    return;
  }
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    res.end(body);
    return;
  }
  const stream = streamOf(body);
  const failed = stream && watch?.(ctx, body as object);
  if (stream && failed) {
    pipeWatched(res, stream, failed);
    return;
  }
  if (stream) {
    pipeline(stream, res, (err) => {
      if (err && ctx.app.listenerCount('error')) ctx.onerror(err);
    });
    return;
  }
  body = JSON.stringify(body);
  if (!res.headersSent) ctx.length = Buffer.byteLength(body as string);
  res.end(body);
}

/** A body Koa pipes, as a Node stream (Koa's own list: Blob, web ReadableStream, Response, Node streams). */
function streamOf(body: unknown): NodeJS.ReadableStream | undefined {
  if (body instanceof Blob) return Readable.from(body.stream());
  if (body instanceof ReadableStream) return Readable.from(body);
  if (body instanceof Response) return Readable.from(body.body ?? '');
  if (isStream(body)) return body;
  return undefined;
}

/** Koa's is-stream test: a Node stream, or an object that reads like a readable one. */
function isStream(body: unknown): body is NodeJS.ReadableStream {
  if (body instanceof Stream) return true;
  if (body === null || typeof body !== 'object') return false;
  const like = body as Record<string, unknown>;
  return (
    like.readable === true &&
    typeof like.pipe === 'function' &&
    typeof like.read === 'function' &&
    typeof like.readableObjectMode === 'boolean' &&
    typeof like.destroy === 'function' &&
    typeof like.destroyed === 'boolean'
  );
}

/** Pipes a body stream; when it fails, `failed` hears of it, and may answer instead of the cut while nothing was written. */
function pipeWatched(res: GatewayContext['res'], stream: NodeJS.ReadableStream, failed: (err: Error) => boolean): void {
  stream.once('error', (err: Error) => {
    stream.unpipe(res);
    // `failed` is told in any case (to log), and answers only while nothing was sent.
    if (res.writableEnded || !failed(err)) res.destroy(err);
  });
  // The client went away before the end: stop reading, as pipeline would.
  res.once('close', () => {
    if (!res.writableFinished) (stream as Readable).destroy();
  });
  stream.pipe(res);
}

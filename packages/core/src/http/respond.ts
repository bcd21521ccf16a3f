import { Readable, Stream, pipeline } from 'node:stream';
import type { GatewayContext } from './context.js';

/** Statuses whose answers have no body (Koa's `statuses.empty`). */
const EMPTY_STATUSES = new Set([204, 205, 304]);

/**
 * Writes the answer Koa's middleware left in the context: Koa's `respond` (koa/lib/application.js, which
 * Koa keeps private), for GatewayKoa's handleRequest. The same rules in the same order: `ctx.respond =
 * false` leaves the response alone, a bodiless status or HEAD ends it without a body, no body sends the
 * status message, a Buffer or string is sent as it is, a Blob, web ReadableStream, Response or Node stream
 * is piped, anything else is JSON.
 */
export function respond(ctx: GatewayContext): void {
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

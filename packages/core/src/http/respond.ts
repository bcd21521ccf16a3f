import { pipeline, Readable } from 'node:stream';
import type { GatewayContext } from './context.js';

/** Statuses whose answers have no body (RFC 9110): 204 No Content, 205 Reset Content, 304 Not Modified. */
const BODILESS = new Set([204, 205, 304]);

/**
 * Writes a context's answer for requests answered outside Koa's handleRequest (direct-answers.ts), the way
 * Koa's own respond does for the bodies tkgate sets: a string, a Buffer, a stream (piped, its errors to
 * ctx.onerror as Koa does), an object as JSON, or none (the status's text). `ctx.respond = false` means
 * the body was written already (a plugin's body writer).
 */
export function respond(ctx: GatewayContext): void {
  if (ctx.respond === false) return;
  const res = ctx.res;
  if (!ctx.writable) {
    res.end();
    return;
  }
  if (BODILESS.has(ctx.status)) {
    ctx.body = null;
    res.end();
    return;
  }
  const body: unknown = ctx.body;
  if (ctx.method === 'HEAD') {
    if (!res.headersSent && !res.hasHeader('Content-Length') && Number.isInteger(ctx.response.length)) ctx.length = ctx.response.length;
    res.end();
    return;
  }
  if (body === null || body === undefined) {
    const text = ctx.message || String(ctx.status);
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
  if (body instanceof Readable) {
    pipeline(body, res, (err) => {
      if (err) ctx.onerror(err);
    });
    return;
  }
  const json = JSON.stringify(body);
  if (!res.headersSent) ctx.length = Buffer.byteLength(json);
  res.end(json);
}

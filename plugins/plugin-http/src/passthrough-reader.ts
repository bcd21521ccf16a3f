import net from 'node:net';
import type { Writable } from 'node:stream';
import type { BodyWriter } from '@tkgate/core';
import { chunkDecoder } from './chunk-decoder.js';
import { bareLineFeed, parseHead, type Framing } from './response-head.js';
import { badResponse, upstreamFailure } from './upstream-failure.js';
import type { UpstreamRequest } from './upstream-transport.js';

/**
 * Passthrough downloads from http:// upstreams without a fresh Buffer per read. Node allocates one per
 * socket read and V8 collects them only after ~64 MB of such memory: a first 100 MB download raised RSS
 * by 47-68 MB through got or undici. Here one 64 KiB buffer per connection is read into (net.Socket's
 * `onread`), each body slice is written to the client, and reading resumes only when that write has
 * flushed, so the buffer is never overwritten while the client side still holds it.
 */
const READ_BUFFER_BYTES = 64 * 1024;
const MAX_HEAD_BYTES = 64 * 1024;

export interface PassthroughHead {
  status: number;
  headers: Record<string, string>;
  /** The exact number of bytes writeBody will write, when the upstream framed the body by length. */
  contentLength: number | undefined;
  /** Streams the body into `out`; call at most once. */
  writeBody: BodyWriter;
  /** Releases the connection without reading the body (non-2xx answers). */
  discard(): void;
}

/** Where net.connect wants an address: an IPv6 literal without the brackets of its URL form. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

export function passthroughRequest(request: UpstreamRequest): Promise<PassthroughHead> {
  const url = new URL(request.url);
  const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  let head: Buffer | undefined = Buffer.alloc(0);
  /** Head bytes read so far, interim (1xx) answers included. */
  let headBytes = 0;
  let pending: Buffer | undefined;
  let sink: ((slices: Buffer[], done: boolean) => void) | undefined;
  let framing: Framing = { kind: 'close' };
  let remaining = 0;
  const chunked = chunkDecoder();
  let finished = false;
  /** The first error; whoever waits now (head, then body) hears it, and so does a body writer that starts later. */
  let failed: Error | undefined;
  let reject: (err: Error) => void = () => undefined;
  const fail = (err: Error) => {
    failed ??= err;
    reject(failed);
  };

  return new Promise((resolveHead, rejectHead) => {
    reject = rejectHead;
    const socket = net.connect({
      host: hostOf(url),
      port: Number(url.port || 80),
      onread: {
        buffer: readBuffer,
        callback: (bytes: number, buffer: Uint8Array) => {
          const data = Buffer.from(buffer.buffer, buffer.byteOffset, bytes);
          if (!head) return deliver(data);
          try {
            return readHead(data);
          } catch (err) {
            socket.destroy(err as Error);
            return false;
          }
        },
      },
    });
    const abort = () => socket.destroy(upstreamFailure('ERR_ABORTED', 'the client went away'));
    request.signal.addEventListener('abort', abort, { once: true });
    socket.setTimeout(request.timeoutMs, () => socket.destroy(upstreamFailure('ETIMEDOUT', `no data for ${request.timeoutMs} ms`)));
    socket.on('error', (err) => fail(err));
    socket.on('close', () => {
      request.signal.removeEventListener('abort', abort);
      if (finished) return;
      // A close-delimited body ends here, once whatever was read before has been written.
      if (!head && framing.kind === 'close') {
        if (sink && !pending) finish();
        return;
      }
      fail(upstreamFailure('ECONNRESET', 'the upstream closed the connection before the end of the answer'));
    });
    const path = `${url.pathname}${url.search}`;
    const lines = [`POST ${path} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close', `Content-Length: ${Buffer.byteLength(request.body)}`];
    for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${value}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n${request.body}`);

    /** Collects the head; interim answers (100 Continue, 103 Early Hints) are read past, the final one resolves. */
    function readHead(data: Buffer): boolean {
      head = Buffer.concat([head!, data]);
      headBytes += data.length;
      for (;;) {
        const end = head.indexOf('\r\n\r\n');
        if (bareLineFeed(end < 0 ? head : head.subarray(0, end)) >= 0) throw badResponse('the upstream sent a bare LF in its header');
        if (end < 0) {
          if (headBytes > MAX_HEAD_BYTES) throw upstreamFailure('ERR_HEAD_TOO_LARGE', 'the upstream sent an oversized header');
          return true;
        }
        const parsed = parseHead(head.subarray(0, end).toString('latin1'));
        const rest = head.subarray(end + 4);
        if (parsed.status === 101) throw badResponse('the upstream switched protocols unasked');
        if (parsed.status < 200) {
          head = rest;
          continue;
        }
        head = undefined;
        framing = parsed.framing;
        if (framing.kind === 'length') remaining = framing.length;
        if (rest.length > 0) pending = Buffer.from(rest);
        resolveHead({
          status: parsed.status,
          headers: parsed.headers,
          contentLength: framing.kind === 'length' && parsed.status !== 204 && parsed.status !== 304 ? framing.length : undefined,
          discard: () => {
            finished = true;
            socket.destroy();
          },
          writeBody: (out) => streamBody(out),
        });
        return false;
      }
    }

    function streamBody(out: Writable): Promise<void> {
      return new Promise<void>((resolveBody, rejectBody) => {
        reject = rejectBody;
        if (failed) return rejectBody(failed);
        finishBody = resolveBody;
        const next = () => (socket.destroyed ? finish() : socket.resume());
        sink = (slices, done) => {
          const last = slices.length - 1;
          if (last < 0) {
            if (done) finish();
            else next();
            return;
          }
          out.cork();
          slices.forEach((slice, index) =>
            out.write(slice, index === last ? (err) => (err ? fail(err) : done ? finish() : next()) : undefined),
          );
          process.nextTick(() => out.uncork());
        };
        if (framing.kind === 'length' && remaining === 0) return finish();
        if (pending) {
          const first = pending;
          pending = undefined;
          deliver(first);
        } else {
          next();
        }
      });
    }

    function deliver(data: Buffer): boolean {
      let slices: Buffer[];
      let done = false;
      if (framing.kind === 'chunked') {
        try {
          ({ slices, done } = chunked(data));
        } catch (err) {
          socket.destroy(err as Error);
          return false;
        }
      } else if (framing.kind === 'length') {
        const take = Math.min(remaining, data.length);
        slices = [data.subarray(0, take)];
        remaining -= take;
        done = remaining === 0;
      } else {
        slices = [data];
      }
      sink!(slices, done);
      return false;
    }

    let finishBody: () => void = () => undefined;
    function finish(): void {
      if (finished) return;
      finished = true;
      socket.destroy();
      finishBody();
    }
  });
}

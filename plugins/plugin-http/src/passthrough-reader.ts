import net from 'node:net';
import type { Writable } from 'node:stream';
import type { BodyWriter } from '@tkgate/core';
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
  /** Streams the body into `out`; call at most once. */
  writeBody: BodyWriter;
  /** Releases the connection without reading the body (non-2xx answers). */
  discard(): void;
}

type Framing = { kind: 'length'; remaining: number } | { kind: 'chunked' } | { kind: 'close' };

const failure = (code: string, message: string) => Object.assign(new Error(message), { code });

export function passthroughRequest(request: UpstreamRequest): Promise<PassthroughHead> {
  const url = new URL(request.url);
  const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  let head: Buffer | undefined = Buffer.alloc(0);
  let pending: Buffer | undefined;
  let sink: ((slices: Buffer[], done: boolean) => void) | undefined;
  let framing: Framing = { kind: 'close' };
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
      host: url.hostname,
      port: Number(url.port || 80),
      onread: {
        buffer: readBuffer,
        callback: (bytes: number, buffer: Uint8Array) => {
          const data = Buffer.from(buffer.buffer, buffer.byteOffset, bytes);
          if (head) return readHead(data);
          return deliver(data);
        },
      },
    });
    const abort = () => socket.destroy(failure('ERR_ABORTED', 'the client went away'));
    request.signal.addEventListener('abort', abort, { once: true });
    socket.setTimeout(request.timeoutMs, () => socket.destroy(failure('ETIMEDOUT', `no data for ${request.timeoutMs} ms`)));
    socket.on('error', (err) => fail(err));
    socket.on('close', () => {
      request.signal.removeEventListener('abort', abort);
      if (finished) return;
      // A close-delimited body ends here, once whatever was read before has been written.
      if (!head && framing.kind === 'close') {
        if (sink && !pending) finish();
        return;
      }
      fail(failure('ECONNRESET', 'the upstream closed the connection before the end of the answer'));
    });
    const path = `${url.pathname}${url.search}`;
    const lines = [`POST ${path} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close', `Content-Length: ${Buffer.byteLength(request.body)}`];
    for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${value}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n${request.body}`);

    function readHead(data: Buffer): boolean {
      head = Buffer.concat([head!, data]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_HEAD_BYTES) socket.destroy(failure('ERR_HEAD_TOO_LARGE', 'the upstream sent an oversized header'));
        return true;
      }
      const [statusLine, ...headerLines] = head.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
      if (!status) {
        socket.destroy(failure('ERR_BAD_RESPONSE', 'the upstream did not answer HTTP/1.1'));
        return false;
      }
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      if (/\bchunked\b/i.test(headers['transfer-encoding'] ?? '')) framing = { kind: 'chunked' };
      else if (headers['content-length'] !== undefined) framing = { kind: 'length', remaining: Number(headers['content-length']) };
      const rest = head.subarray(end + 4);
      head = undefined;
      if (rest.length > 0) pending = Buffer.from(rest);
      resolveHead({
        status,
        headers,
        discard: () => {
          finished = true;
          socket.destroy();
        },
        writeBody: (out) => streamBody(out),
      });
      return false;
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
        if (framing.kind === 'length' && framing.remaining === 0 && !pending) return finish();
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
        ({ slices, done } = chunked(data));
      } else if (framing.kind === 'length') {
        const take = Math.min(framing.remaining, data.length);
        slices = [data.subarray(0, take)];
        framing.remaining -= take;
        done = framing.remaining === 0;
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

/** Decodes HTTP/1.1 chunked framing across reads; returns views of the data, never copies. */
function chunkDecoder(): (data: Buffer) => { slices: Buffer[]; done: boolean } {
  let state: 'size' | 'data' | 'data-end' | 'trailer' | 'done' = 'size';
  let line = '';
  let remaining = 0;
  return (data) => {
    const slices: Buffer[] = [];
    let i = 0;
    while (i < data.length && state !== 'done') {
      if (state === 'data') {
        const take = Math.min(remaining, data.length - i);
        slices.push(data.subarray(i, i + take));
        remaining -= take;
        i += take;
        if (remaining === 0) state = 'data-end';
        continue;
      }
      const char = data[i++]!;
      if (char !== 0x0a) {
        if (char !== 0x0d) line += String.fromCharCode(char);
        continue;
      }
      if (state === 'size') {
        remaining = parseInt(line.split(';')[0]!, 16);
        if (Number.isNaN(remaining)) throw failure('ERR_BAD_CHUNK', 'the upstream sent a malformed chunk size');
        state = remaining === 0 ? 'trailer' : 'data';
      } else if (state === 'data-end') {
        state = 'size';
      } else if (line === '') {
        state = 'done';
      }
      line = '';
    }
    return { slices, done: state === 'done' };
  };
}

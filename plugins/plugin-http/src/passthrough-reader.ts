import type { Writable } from 'node:stream';
import { chunkDecoder } from './chunk-decoder.js';
import type { ConnectionPool } from './connection-pool.js';
import { bareLineFeed, parseHead, type Framing } from './response-head.js';
import { libraryFailure } from './library-errors.js';
import { badResponse, UpstreamFailure } from './upstream-failure.js';
import type { UpstreamConnection } from './upstream-connection.js';
import { answersAnother, type UpstreamRequest, type UpstreamResponse } from './upstream-transport.js';

/**
 * Passthrough downloads from http:// and https:// upstreams with flat memory and few copies. The connection
 * (upstream-connection.ts) reads into two buffers of its own; each body slice is written to the client
 * straight from them, and a buffer is read into again only once its write has flushed. Connections come
 * from a keep-alive pool and go back to it only after an answer that was framed by length or chunks, read
 * to its exact end, from an HTTP/1.1 upstream that did not say `Connection: close`; any doubt closes them.
 */
const MAX_HEAD_BYTES = 64 * 1024;

/**
 * One exchange on a kept or a new connection. A kept connection that fails before answering is not tried
 * again here: the request may have reached the upstream (RFC 9110 section 9.2.2); proxy.ts tries once more
 * only for an endpoint declared idempotent.
 */
export function passthroughRequest(request: UpstreamRequest, pool: ConnectionPool): Promise<UpstreamResponse> {
  const url = new URL(request.url);
  return exchange(request, url, pool, pool.acquire(url, request.connectionGroup, request.caller, request.tls));
}

function exchange(request: UpstreamRequest, url: URL, pool: ConnectionPool, connection: UpstreamConnection): Promise<UpstreamResponse> {
  const socket = connection.socket;
  /** Head bytes kept across reads (copied: the read buffers are reused), interim (1xx) answers included. */
  let head: Buffer | undefined = Buffer.alloc(0);
  let headBytes = 0;
  /** The final head, parsed; the answer is handed on once its first body bytes have been read and decoded. */
  let answer: UpstreamResponse | undefined;
  /** The first body slices, decoded, still in a read buffer until the body writer starts. */
  let pending: { slices: Buffer[]; done: () => void } | undefined;
  let out: Writable | undefined;
  let framing: Framing = { kind: 'close' };
  let keepAlive = false;
  let keepAliveMs: number | undefined;
  let remaining = 0;
  const chunked = chunkDecoder();
  /** Writes to the client not yet flushed. */
  let writing = 0;
  /** The body was read to its framed end, and not a byte more. */
  let complete = false;
  let clean = true;
  /** A close-delimited body ended (the upstream closed). */
  let upstreamEnded = false;
  let finished = false;
  /** The first error; whoever waits now (head, then body) hears it, and so does a body writer that starts later. */
  let failed: Error | undefined;
  let reject: (err: Error) => void = () => undefined;
  const fail = (err: Error) => {
    failed ??= err;
    reject(failed);
  };
  let finishBody: () => void = () => undefined;

  // whenClientGone, not the signal: the signal is made on first read, and costs an AbortController per request.
  const stopWatching = request.whenClientGone(() => {
    socket.destroy(new UpstreamFailure('aborted', 'the client went away'));
  });
  connection.timeSilence(request.timeoutMs);

  return new Promise((resolveHead, rejectHead) => {
    reject = rejectHead;
    /** Hands the answer on (once): its first body bytes are read and decoded, or there are none. */
    const handOn = () => {
      if (!answer) return;
      resolveHead(answer);
      answer = undefined;
    };
    connection.user = {
      onData(data, done) {
        try {
          if (head) return readHead(data, done);
          if (!answer) return deliver(data, done);
          // The first body bytes: a malformed first chunk fails the exchange before the client has any answer.
          pending = { slices: decode(data), done };
          handOn();
          return false;
        } catch (err) {
          done();
          socket.destroy(err as Error);
          return false;
        }
      },
      // net's errors (refused, reset), and the failures this reader destroys the socket with.
      onError: (err) => fail(libraryFailure(err)),
      onClose() {
        stopWatching();
        if (finished) return;
        // A close-delimited body ends here, once whatever was read before has been written.
        if (!head && framing.kind === 'close') {
          upstreamEnded = true;
          handOn();
          if (out && !pending && writing === 0) finish();
          return;
        }
        fail(new UpstreamFailure('connection', 'the upstream closed the connection before the end of the answer'));
      },
      onTimeout: () => socket.destroy(new UpstreamFailure('timeout', `no data for ${request.timeoutMs} ms`)),
    };
    const path = `${url.pathname}${url.search}`;
    const lines = [`POST ${path} HTTP/1.1`, `Host: ${url.host}`, `Content-Length: ${Buffer.byteLength(request.body)}`];
    for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${value}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n${request.body}`);
    connection.read();

    /** Collects the head; interim answers (100 Continue, 103 Early Hints) are read past, the final one resolves. */
    function readHead(data: Buffer, done: () => void): boolean {
      // Mostly the whole head comes in the first read and is parsed in place.
      let bytes = head!.length === 0 ? data : Buffer.concat([head!, data]);
      headBytes += data.length;
      for (;;) {
        const end = bytes.indexOf('\r\n\r\n');
        if (bareLineFeed(end < 0 ? bytes : bytes.subarray(0, end)) >= 0) throw badResponse('the upstream sent a bare LF in its header');
        if (end < 0) {
          if (headBytes > MAX_HEAD_BYTES) throw badResponse('the upstream sent an oversized header');
          head = Buffer.from(bytes);
          done();
          return true;
        }
        const parsed = parseHead(bytes.subarray(0, end).toString('latin1'));
        const rest = bytes.subarray(end + 4);
        if (parsed.status === 101) throw badResponse('the upstream switched protocols unasked');
        if (parsed.status < 200) {
          bytes = rest;
          continue;
        }
        // Thrown: the exchange fails and its connection is destroyed.
        const another = answersAnother(request.headers['x-request-id'], parsed.headers['x-request-id']);
        if (another) throw another;
        head = undefined;
        framing = parsed.framing;
        keepAlive = parsed.keepAlive;
        keepAliveMs = parsed.keepAliveMs;
        if (framing.kind === 'length') remaining = framing.length;
        connection.bodyReads = framing.kind !== 'length' || remaining > 0;
        answer = {
          status: parsed.status,
          headers: parsed.headers,
          contentLength: framing.kind === 'length' && parsed.status !== 204 && parsed.status !== 304 ? framing.length : undefined,
          discard: () => {
            finished = true;
            stopWatching();
            socket.destroy();
          },
          body: (target) => streamBody(target),
        };
        // Body bytes that came with the head wait in their read buffer (no copy) until the body writer starts.
        if (rest.length > 0) pending = { slices: decode(rest), done };
        else done();
        if (pending || !connection.bodyReads) {
          handOn();
          return false;
        }
        // No body byte yet: the answer waits for the first (the silence timer runs meanwhile).
        return true;
      }
    }

    function streamBody(target: Writable): Promise<void> {
      return new Promise<void>((resolveBody, rejectBody) => {
        reject = rejectBody;
        if (failed) return rejectBody(failed);
        finishBody = resolveBody;
        out = target;
        if (pending) {
          const { slices, done } = pending;
          pending = undefined;
          write(slices, done, complete);
          if (!complete) connection.read();
        } else if (framing.kind === 'length' && remaining === 0) {
          complete = true;
          finish();
        } else if (upstreamEnded) {
          finish();
        } else {
          connection.read();
        }
      });
    }

    /** Writes the body slices of one read to the client; true while more is to be read. Throws on malformed chunks. */
    function deliver(data: Buffer, done: () => void): boolean {
      write(decode(data), done, complete);
      return !complete;
    }

    /** The body slices of one read (views, never copies); sets `complete` at the body's framed end. */
    function decode(data: Buffer): Buffer[] {
      let slices: Buffer[];
      let extra = 0;
      if (framing.kind === 'chunked') {
        ({ slices, done: complete, rest: extra } = chunked(data));
      } else if (framing.kind === 'length') {
        const take = Math.min(remaining, data.length);
        slices = take > 0 ? [data.subarray(0, take)] : [];
        remaining -= take;
        extra = data.length - take;
        complete = remaining === 0;
      } else {
        slices = [data];
      }
      if (complete) connection.bodyReads = false;
      // Bytes past the end are a second answer nobody asked for: never forwarded, and the connection is not reused.
      if (extra > 0) clean = false;
      return slices;
    }

    function write(slices: Buffer[], done: () => void, last: boolean): void {
      if (slices.length === 0) {
        done();
        if (last) finish();
        return;
      }
      writing++;
      const flushed = (err?: Error | null) => {
        writing--;
        done();
        if (err) return fail(err);
        if (last || (upstreamEnded && writing === 0)) finish();
      };
      if (slices.length === 1) {
        out!.write(slices[0], flushed);
        return;
      }
      out!.cork();
      slices.forEach((slice, index) => out!.write(slice, index === slices.length - 1 ? flushed : undefined));
      out!.uncork();
    }

    function finish(): void {
      if (finished) return;
      finished = true;
      stopWatching();
      if (complete && clean && keepAlive && framing.kind !== 'close' && writing === 0)
        pool.release(url, request.connectionGroup, request.caller, connection, keepAliveMs);
      else socket.destroy();
      finishBody();
    }
  });
}

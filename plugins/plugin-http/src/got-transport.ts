import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import got from 'got';
import { libraryFailure } from './library-errors.js';
import { UpstreamFailure, withUpstreamStatus } from './upstream-failure.js';
import { tlsConnectOptions } from './upstream-tls.js';
import {
  exactLength,
  firstBytes,
  perGroup,
  readWhole,
  refusedFraming,
  type UpstreamResponse,
  type UpstreamRequest,
  type UpstreamTransport,
} from './upstream-transport.js';

/**
 * Calls `onSilence` when the upstream sends nothing for `ms` while the gateway wants to read. got's socket
 * timeout would also count a pause for the client's sake (a slow downloader: got stops reading, bytes wait
 * in its buffers); this timer, when it fires while bytes still wait unread, starts over instead.
 */
function timeSilence(response: http.IncomingMessage, stream: Readable, ms: number, onSilence: () => void): void {
  const timer = setTimeout(() => (response.readableLength > 0 || stream.readableLength > 0 ? timer.refresh() : onSilence()), ms);
  response.on('data', () => timer.refresh());
  response.once('close', () => clearTimeout(timer));
}

/**
 * got, tuned for a proxy: keep-alive agents, no retries, no decompression (bytes pass through as sent),
 * no redirects followed, no caching, and HTTP errors returned rather than thrown.
 */
export function gotTransport(): UpstreamTransport {
  const agents = perGroup((tls) => ({
    http: new http.Agent({ keepAlive: true, maxSockets: 256 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 256, ...tlsConnectOptions(tls) }),
  }));
  const client = got.extend({
    retry: { limit: 0 },
    decompress: false,
    followRedirect: false,
    throwHttpErrors: false,
    cache: false,
    http2: false,
  });
  const post = (request: UpstreamRequest): Promise<UpstreamResponse> =>
    new Promise((resolve, reject) => {
      const stream = client.stream.post(request.url, {
        agent: agents.of(request),
        headers: request.headers,
        body: request.body,
        // Streamed: the wait for the head; each silence after it is timed by timeSilence, not by got's socket timeout.
        timeout: request.streamed ? { response: request.timeoutMs } : { request: request.timeoutMs },
        signal: request.signal,
      });
      // got may emit 'error' at moments no reader is listening (an abort racing the response, a second
      // error after the first); the caller learns of errors through this promise or by reading the body,
      // so an unheard one must never become an unhandled 'error' event that ends the process.
      stream.on('error', () => undefined);
      // An unasked 101 Switching Protocols reaches node:http's 'upgrade', which got does not hear: without
      // this the call would wait past its own timeout, unanswered.
      stream.once('request', (clientRequest: http.ClientRequest) =>
        clientRequest.once('upgrade', (_response, socket) => {
          socket.destroy();
          stream.destroy(new UpstreamFailure('invalid_response', 'the upstream switched protocols (101) unasked'));
        }),
      );
      const fail = (err: unknown) => reject(libraryFailure(err));
      stream.once('error', fail);
      stream.once('response', (response: http.IncomingMessage) => {
        stream.off('error', fail);
        const status = response.statusCode ?? 0;
        const refused = refusedFraming(response.headers);
        if (refused) {
          stream.destroy();
          return reject(refused);
        }
        const answer = { status, headers: response.headers, contentLength: exactLength(response.headers), body: stream, discard: () => stream.destroy() };
        if (!request.streamed) return resolve(answer);
        timeSilence(response, stream, request.timeoutMs, () => stream.destroy(new UpstreamFailure('timeout', `no data for ${request.timeoutMs} ms`)));
        firstBytes(stream).then(
          () => resolve(answer),
          (err: unknown) => reject(withUpstreamStatus(libraryFailure(err), status)),
        );
      });
    });
  return {
    post,
    fetchWhole: async (request, maxBytes) => readWhole(await post(request), maxBytes, libraryFailure),
    close: () => {
      for (const agent of agents.all()) {
        agent.http.destroy();
        agent.https.destroy();
      }
    },
  };
}

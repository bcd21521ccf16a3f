import http from 'node:http';
import https from 'node:https';
import type { Duplex, Readable } from 'node:stream';
import got from 'got';
import { libraryFailure } from './library-errors.js';
import { UpstreamFailure, withUpstreamStatus } from './upstream-failure.js';
import { tlsConnectOptions } from './upstream-tls.js';
import {
  answersAnother,
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

/** Any byte on an idle kept socket: its upstream sent more than its answer, and the socket is never used again. */
function retireOnStrayBytes(this: Duplex): void {
  this.destroy();
}

/**
 * node:http's agent, except that a kept socket on which the upstream sends anything while it is idle is
 * closed (as undici and the reader do): node:http would read those bytes as the start of the next answer.
 */
function strict<T extends http.Agent>(agent: T): T {
  const keep = agent.keepSocketAlive.bind(agent);
  const reuse = agent.reuseSocket.bind(agent);
  agent.keepSocketAlive = (socket) => {
    // node's own types say void; it returns whether the socket is kept.
    if (!(keep(socket) as unknown as boolean)) return false as unknown as void;
    socket.on('data', retireOnStrayBytes);
    return true as unknown as void;
  };
  agent.reuseSocket = (socket, request) => {
    socket.off('data', retireOnStrayBytes);
    reuse(socket, request);
  };
  return agent;
}

/**
 * got, tuned for a proxy: keep-alive agents, no retries, no decompression (bytes pass through as sent),
 * no redirects followed, no caching, and HTTP errors returned rather than thrown.
 */
export function gotTransport(): UpstreamTransport {
  const agents = perGroup(
    (tls) => ({
      http: strict(new http.Agent({ keepAlive: true, maxSockets: 256 })),
      https: strict(new https.Agent({ keepAlive: true, maxSockets: 256, ...tlsConnectOptions(tls) })),
    }),
    // Only once no call runs on it (destroy closes busy sockets too): its idle sockets close with it.
    (agent) => {
      const busy = [agent.http, agent.https].some((one) => Object.keys(one.sockets).length > 0 || Object.keys(one.requests).length > 0);
      if (!busy) {
        agent.http.destroy();
        agent.https.destroy();
      }
      return !busy;
    },
  );
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
        const refused = refusedFraming(response.headers) ?? answersAnother(request.headers['x-request-id'], response.headers['x-request-id']);
        if (refused) {
          // Its socket with it: the rest of what it sends is never read as a later answer.
          response.socket.destroy();
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
      agents.close();
    },
  };
}

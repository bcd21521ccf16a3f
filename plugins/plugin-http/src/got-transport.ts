import http from 'node:http';
import https from 'node:https';
import got from 'got';
import { libraryFailure } from './library-errors.js';
import { withUpstreamStatus } from './upstream-failure.js';
import { exactLength, firstBytes, perGroup, readWhole, type UpstreamResponse, type UpstreamRequest, type UpstreamTransport } from './upstream-transport.js';

/**
 * got, tuned for a proxy: keep-alive agents, no retries, no decompression (bytes pass through as sent),
 * no redirects followed, no caching, and HTTP errors returned rather than thrown.
 */
export function gotTransport(): UpstreamTransport {
  const agents = perGroup(() => ({ http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) }));
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
        agent: agents.of(request.connectionGroup),
        headers: request.headers,
        body: request.body,
        timeout: request.streamed ? { response: request.timeoutMs, socket: request.timeoutMs } : { request: request.timeoutMs },
        signal: request.signal,
      });
      // got may emit 'error' at moments no reader is listening (an abort racing the response, a second
      // error after the first); the caller learns of errors through this promise or by reading the body,
      // so an unheard one must never become an unhandled 'error' event that ends the process.
      stream.on('error', () => undefined);
      const fail = (err: unknown) => reject(libraryFailure(err));
      stream.once('error', fail);
      stream.once('response', (response: http.IncomingMessage) => {
        stream.off('error', fail);
        const status = response.statusCode ?? 0;
        const answer = { status, headers: response.headers, contentLength: exactLength(response.headers), body: stream, discard: () => stream.destroy() };
        if (!request.streamed) return resolve(answer);
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

import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import got from 'got';
import { Agent } from 'undici';

/** One upstream call: what the http endpoint type needs of an HTTP client, and no more. */
export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Streamed answers: the timeout bounds the wait for headers and each silence, not the whole download. */
  streamed: boolean;
  signal: AbortSignal;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as it arrives; errors later (reset, timeout) surface as stream errors. */
  body: Readable;
}

export interface UpstreamTransport {
  post(request: UpstreamRequest): Promise<UpstreamResponse>;
  close(): void;
}

/**
 * got, tuned for a proxy: keep-alive agents, no retries, no decompression (bytes pass through as sent),
 * no redirects followed, no caching, and HTTP errors returned rather than thrown.
 */
export function gotTransport(): UpstreamTransport {
  const agent = { http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) };
  const client = got.extend({
    agent,
    retry: { limit: 0 },
    decompress: false,
    followRedirect: false,
    throwHttpErrors: false,
    cache: false,
    http2: false,
  });
  return {
    post: (request) =>
      new Promise((resolve, reject) => {
        const stream = client.stream.post(request.url, {
          headers: request.headers,
          body: request.body,
          timeout: request.streamed ? { response: request.timeoutMs, socket: request.timeoutMs } : { request: request.timeoutMs },
          signal: request.signal,
        });
        // got may emit 'error' at moments no reader is listening (an abort racing the response, a second
        // error after the first); the caller learns of errors through this promise or by reading the body,
        // so an unheard one must never become an unhandled 'error' event that ends the process.
        stream.on('error', () => undefined);
        stream.once('error', reject);
        stream.once('response', (response: http.IncomingMessage) => {
          stream.off('error', reject);
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: stream });
        });
      }),
    close: () => {
      agent.http.destroy();
      agent.https.destroy();
    },
  };
}

/**
 * undici, the same contract: keep-alive connections per origin, no retries, no redirects, bytes as sent.
 * The timeout bounds the wait for the headers and each silence of the body (undici's own timers: a
 * per-request AbortSignal.timeout cost 3.5% of a proxied request's CPU).
 */
export function undiciTransport(): UpstreamTransport {
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: 256, pipelining: 1 });
  return {
    async post(request) {
      const url = new URL(request.url);
      const response = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: request.headers,
        body: request.body,
        signal: request.signal,
        headersTimeout: request.timeoutMs,
        bodyTimeout: request.timeoutMs,
      });
      // The reader (iterator or Koa's pipe) hears body errors; an unheard one must not end the process.
      response.body.on('error', () => undefined);
      return { status: response.statusCode, headers: response.headers, body: response.body };
    },
    close: () => void agent.destroy(),
  };
}

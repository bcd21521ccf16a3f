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
  /**
   * Calls share kept connections only within one group: the endpoint's credentials (its configured headers).
   * An upstream that sends bytes after an answer can then only ever reach a call made with the same ones.
   */
  connectionGroup: string;
  /** Aborted when the client goes away; made on first read, so read it only where nothing cheaper works. */
  readonly signal: AbortSignal;
  /** Runs the listener once if the client goes away; returns the function that stops listening. */
  whenClientGone(listener: () => void): () => void;
}

/** A whole answer, read within a byte limit (JSON endpoints). */
export interface UpstreamAnswer {
  status: number;
  /** Empty for a non-2xx answer: its body is not read. */
  body: Buffer;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as it arrives; errors later (reset, timeout) surface as stream errors. */
  body: Readable;
}

export interface UpstreamTransport {
  /** The answer as a stream (passthrough). */
  post(request: UpstreamRequest): Promise<UpstreamResponse>;
  /** The whole answer of at most `maxBytes` (else an ERR_BODY_TOO_LARGE error), for JSON endpoints. */
  fetchWhole(request: UpstreamRequest, maxBytes: number): Promise<UpstreamAnswer>;
  close(): void;
}

/** An error met after the answer's head arrived carries its status (`upstream_status` in the 502's details). */
export const withUpstreamStatus = (err: Error, status: number): Error => Object.assign(err, { upstreamStatus: status });

const bodyTooLarge = (message: string) => Object.assign(new Error(message), { code: 'ERR_BODY_TOO_LARGE' });

/** A streamed answer read whole within `maxBytes` (a non-2xx one not at all). */
async function readWhole(response: UpstreamResponse, maxBytes: number): Promise<UpstreamAnswer> {
  if (response.status < 200 || response.status > 299) {
    response.body.destroy();
    return { status: response.status, body: Buffer.alloc(0) };
  }
  const declared = Number(response.headers['content-length']);
  if (declared > maxBytes) {
    response.body.destroy();
    throw withUpstreamStatus(bodyTooLarge(`upstream declared ${declared} bytes, over ${maxBytes}`), response.status);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        response.body.destroy();
        throw bodyTooLarge(`upstream body over ${maxBytes} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    throw withUpstreamStatus(err as Error, response.status);
  }
  return { status: response.status, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
}

/** A transport's keep-alive agents: one per connection group (UpstreamRequest), made on first use. */
function perGroup<T>(make: () => T): { of(group: string): T; all(): Iterable<T> } {
  const agents = new Map<string, T>();
  return {
    of(group) {
      let agent = agents.get(group);
      if (!agent) {
        agent = make();
        agents.set(group, agent);
      }
      return agent;
    },
    all: () => agents.values(),
  };
}

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
      stream.once('error', reject);
      stream.once('response', (response: http.IncomingMessage) => {
        stream.off('error', reject);
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: stream });
      });
    });
  return {
    post,
    fetchWhole: async (request, maxBytes) => readWhole(await post(request), maxBytes),
    close: () => {
      for (const agent of agents.all()) {
        agent.http.destroy();
        agent.https.destroy();
      }
    },
  };
}

/** Origin and path of an upstream URL, parsed once per URL (URLs come from the configuration: few). */
function originAndPath(cache: Map<string, { origin: string; path: string }>, url: string): { origin: string; path: string } {
  let parsed = cache.get(url);
  if (!parsed) {
    const { origin, pathname, search } = new URL(url);
    parsed = { origin, path: `${pathname}${search}` };
    if (cache.size >= 1000) cache.clear();
    cache.set(url, parsed);
  }
  return parsed;
}

/**
 * undici, the same contract: keep-alive connections per origin, no retries, no redirects, bytes as sent.
 * The timeout bounds the wait for the headers and each silence of the body (undici's own timers: a
 * per-request AbortSignal.timeout cost 3.5% of a proxied request's CPU). Whole answers go through
 * undici's dispatcher with a handler of ours that keeps the chunks: no stream, no async iterator, no
 * parsed header object per request, and the client's going away aborts the exchange without an
 * AbortSignal (docs/performance.md).
 */
export function undiciTransport(): UpstreamTransport {
  const agents = perGroup(() => new Agent({ keepAliveTimeout: 10_000, connections: 256, pipelining: 1 }));
  const urls = new Map<string, { origin: string; path: string }>();
  return {
    async post(request) {
      const { origin, path } = originAndPath(urls, request.url);
      const response = await agents.of(request.connectionGroup).request({
        origin,
        path,
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
    fetchWhole(request, maxBytes) {
      const { origin, path } = originAndPath(urls, request.url);
      return new Promise((resolve, reject) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let status = 0;
        let settled = false;
        let abort: ((reason: Error) => void) | undefined;
        let goneBeforeConnect: Error | undefined;
        const settle = () => {
          settled = true;
          stopWatching();
        };
        const fail = (err: Error) => {
          if (settled) return;
          settle();
          reject(status ? withUpstreamStatus(err, status) : err);
        };
        const stopWatching = request.whenClientGone(() => {
          const gone = Object.assign(new Error('the client closed the connection'), { name: 'AbortError' });
          if (abort) abort(gone);
          else goneBeforeConnect = gone;
        });
        agents.of(request.connectionGroup).dispatch(
          { origin, path, method: 'POST', headers: request.headers, body: request.body, headersTimeout: request.timeoutMs, bodyTimeout: request.timeoutMs },
          {
            onConnect(abortExchange: (reason: Error) => void) {
              abort = abortExchange;
              if (goneBeforeConnect) abortExchange(goneBeforeConnect);
            },
            onHeaders(statusCode: number) {
              // Interim answers (100 Continue, 103 Early Hints) come here too; the final one follows.
              if (statusCode < 200) return true;
              status = statusCode;
              // A non-2xx answer is refused whatever it says: settled now, its body read and dropped.
              if (status < 200 || status > 299) {
                settle();
                resolve({ status, body: Buffer.alloc(0) });
              }
              return true;
            },
            onData(chunk: Buffer) {
              if (settled) return true;
              size += chunk.length;
              if (size > maxBytes) {
                const tooLarge = bodyTooLarge(`upstream body over ${maxBytes} bytes`);
                fail(tooLarge);
                abort?.(tooLarge);
                return false;
              }
              chunks.push(chunk);
              return true;
            },
            onComplete() {
              if (settled) return;
              settle();
              resolve({ status, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
            },
            onError: fail,
          },
        );
      });
    },
    close: () => {
      for (const agent of agents.all()) void agent.destroy();
    },
  };
}

import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { libraryFailure } from './library-errors.js';
import { withUpstreamStatus } from './upstream-failure.js';
import { tlsConnectOptions } from './upstream-tls.js';
import {
  answersAnother,
  bodyTooLarge,
  exactLength,
  firstBytes,
  perGroup,
  refusedFraming,
  type UpstreamAnswer,
  type UpstreamRequest,
  type UpstreamTransport,
} from './upstream-transport.js';

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

/** The value of a header in undici's raw form (name, value, name, value... as Buffers); a list when repeated. */
function rawHeader(raw: Buffer[], lowerName: string): string | string[] | undefined {
  let found: string | string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    // Compared as text (an allocation) only when the length and the first letter match.
    if (name.length !== lowerName.length || (name[0]! | 0x20) !== lowerName.charCodeAt(0) || name.toString('latin1').toLowerCase() !== lowerName) continue;
    const value = raw[i + 1]!.toString('latin1');
    found = found === undefined ? value : [found, value].flat();
  }
  return found;
}

/**
 * Binds a streamed answer to its request (answersAnother) before undici's request() sees its head: an answer
 * with another request's X-Request-Id aborts the exchange, which destroys its connection. Refused later, once
 * request() has handed the head on, its body may be complete and its connection back in the pool.
 */
class RequestIdBinding implements Dispatcher.DispatchHandler {
  constructor(
    private readonly handler: Dispatcher.DispatchHandler,
    private readonly sent: string | undefined,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.handler.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    const another = statusCode >= 200 ? answersAnother(this.sent, headers['x-request-id']) : undefined;
    if (another) return controller.abort(another);
    this.handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.handler.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.handler.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.handler.onResponseError?.(controller, error);
  }
}

const bindingRequestIds: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) =>
  dispatch(options, new RequestIdBinding(handler, (options.headers as Record<string, string> | undefined)?.['x-request-id']));

/**
 * One whole answer's exchange, as undici's handler of it (undici calls its methods on it): one object per
 * call, where a handler literal cost a closure per callback and per state variable on every call.
 */
class WholeAnswer implements Dispatcher.DispatchHandler {
  readonly answer: Promise<UpstreamAnswer>;
  private resolve!: (answer: UpstreamAnswer) => void;
  private reject!: (err: Error) => void;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private status = 0;
  private settled = false;
  private abort: ((reason: Error) => void) | undefined = undefined;
  private goneBeforeConnect: Error | undefined = undefined;
  private readonly stopWatching: () => void;

  constructor(
    private readonly request: UpstreamRequest,
    private readonly maxBytes: number,
  ) {
    this.answer = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.stopWatching = request.whenClientGone(() => this.clientGone());
  }

  private clientGone(): void {
    const gone = Object.assign(new Error('the client closed the connection'), { name: 'AbortError' });
    if (this.abort) this.abort(gone);
    else this.goneBeforeConnect = gone;
  }

  private settle(): void {
    this.settled = true;
    this.stopWatching();
  }

  private fail(err: Error): void {
    if (this.settled) return;
    this.settle();
    const failure = libraryFailure(err);
    this.reject(this.status ? withUpstreamStatus(failure, this.status) : failure);
  }

  onConnect(abortExchange: (reason: Error) => void): void {
    this.abort = abortExchange;
    if (this.goneBeforeConnect) abortExchange(this.goneBeforeConnect);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    // Interim answers (100 Continue, 103 Early Hints) come here too; the final one follows.
    if (statusCode < 200) return true;
    const another = answersAnother(this.request.headers['x-request-id'], rawHeader(rawHeaders, 'x-request-id'));
    if (another) {
      // Aborting a running exchange destroys its connection.
      this.fail(another);
      this.abort?.(another);
      return false;
    }
    this.status = statusCode;
    // A non-2xx answer is refused whatever it says: settled now, its body read and dropped.
    if (statusCode > 299) {
      this.settle();
      this.resolve({ status: statusCode, body: Buffer.alloc(0) });
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return true;
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      const tooLarge = bodyTooLarge(`upstream body over ${this.maxBytes} bytes`);
      this.fail(tooLarge);
      this.abort?.(tooLarge);
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.settled) return;
    this.settle();
    const { chunks } = this;
    this.resolve({ status: this.status, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.size) });
  }

  onError(err: Error): void {
    this.fail(err);
  }
}

/**
 * undici, the same contract: keep-alive connections per origin, no retries, no redirects, bytes as sent.
 * The timeout bounds the wait for the headers and each silence of the body (undici's own timers: a
 * per-request AbortSignal.timeout cost more; docs/performance.md, "The http transport"). Whole answers go through
 * undici's dispatcher with a handler of ours that keeps the chunks: no stream, no async iterator, no
 * parsed header object per request, and the client's going away aborts the exchange without an
 * AbortSignal (docs/performance.md).
 */
export function undiciTransport(): UpstreamTransport {
  const agents = perGroup(
    (tls) => {
      const agent = new Agent({ keepAliveTimeout: 10_000, connections: 256, pipelining: 1, connect: tlsConnectOptions(tls) });
      // Streamed answers through the binding; whole ones check the id in their own handler (fetchWhole: no wrapper per call).
      return { agent, streaming: agent.compose(bindingRequestIds) };
    },
    // Closed gracefully: calls still running finish first.
    ({ agent }) => (void agent.close(), true),
  );
  const urls = new Map<string, { origin: string; path: string }>();
  return {
    async post(request) {
      const { origin, path } = originAndPath(urls, request.url);
      let response;
      try {
        response = await agents.of(request).streaming.request({
          origin,
          path,
          method: 'POST',
          headers: request.headers,
          body: request.body,
          signal: request.signal,
          headersTimeout: request.timeoutMs,
          bodyTimeout: request.timeoutMs,
        });
      } catch (err) {
        throw libraryFailure(err);
      }
      const body = response.body;
      // The reader (iterator or Koa's pipe) hears body errors; an unheard one must not end the process.
      body.on('error', () => undefined);
      const refused = refusedFraming(response.headers);
      if (refused) {
        body.destroy();
        throw refused;
      }
      if (request.streamed) {
        try {
          await firstBytes(body);
        } catch (err) {
          throw withUpstreamStatus(libraryFailure(err), response.statusCode);
        }
      }
      return { status: response.statusCode, headers: response.headers, contentLength: exactLength(response.headers), body, discard: () => body.destroy() };
    },
    fetchWhole(request, maxBytes) {
      const { origin, path } = originAndPath(urls, request.url);
      const exchange = new WholeAnswer(request, maxBytes);
      agents
        .of(request)
        .agent.dispatch(
          { origin, path, method: 'POST', headers: request.headers, body: request.body, headersTimeout: request.timeoutMs, bodyTimeout: request.timeoutMs },
          exchange,
        );
      return exchange.answer;
    },
    close: () => {
      for (const { agent } of agents.all()) void agent.destroy();
      agents.close();
    },
  };
}

import type { Writable } from 'node:stream';
import type { BodyWriter } from '@tkgate/core';
import type { Dispatcher } from 'undici';

/** Response headers of one connection only (RFC 9110 7.6.1), never passed on; and the gateway's own request id. */
const NOT_PASSED_BACK = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'x-request-id',
]);

/** Headers a repeat of which is dropped, as Node's HTTP client did (node:_http_incoming's matchKnownFields). */
const FIRST_ONLY = new Set([
  'content-type',
  'content-length',
  'user-agent',
  'referer',
  'host',
  'authorization',
  'proxy-authorization',
  'if-modified-since',
  'if-unmodified-since',
  'from',
  'location',
  'max-forwards',
  'retry-after',
  'etag',
  'last-modified',
  'server',
  'age',
  'expires',
]);

/**
 * The upstream's headers the client gets, from undici's raw list (name, value, ... as Buffers): all but hop-by-hop
 * ones (and those its Connection names) and X-Request-Id; Set-Cookie as a list, other repeats joined with ", " or
 * dropped, as Node's HTTP client gave them before.
 */
export function headersBack(raw: Buffer[]): Record<string, string | string[]> {
  const back: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  let named: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('latin1');
    if (NOT_PASSED_BACK.has(name)) {
      if (name === 'connection') (named ??= []).push(...value.split(',').map((token) => token.trim().toLowerCase()));
      continue;
    }
    const had = back[name];
    if (had === undefined) back[name] = name === 'set-cookie' ? [value] : value;
    else if (Array.isArray(had)) had.push(value);
    else if (!FIRST_ONLY.has(name)) back[name] = `${had}, ${value}`;
  }
  if (named) for (const name of named) delete back[name];
  return back;
}

/** Body bytes held while the client's response is not yet being written: past these, undici stops reading. */
const HELD_BYTES = 64 * 1024;

/** What becomes of one forwarded exchange: its answer's head, or a failure before it; then its end. */
export interface ExchangeOutcome {
  /** The final answer's head: its body is written by `body` (a BodyWriter for core's StreamedResponse). */
  answered(status: number, headers: Record<string, string | string[]>, body: BodyWriter): void;
  /** No answer: the error undici (or `abort`) gave. Called at most once, and never after `answered`. */
  failed(err: Error): void;
  /** The exchange is over, answered or not (its body complete or cut): called once, last. */
  over(): void;
}

/**
 * One forwarded request as undici's dispatcher handler (legacy API: raw headers, no stream, no parsed header
 * object). The answer's body goes straight into the client's response with back-pressure (onData says false while
 * the response needs draining, and undici stops reading the upstream until it drains); the bytes that arrive before
 * core hands over the response are held, and an answer complete by then (a small one, usually) goes out in one write
 * with its head. No stream, no pipe: docs/performance.md, "Forwarded requests (scenario 15)".
 */
export class ForwardedExchange implements Dispatcher.DispatchHandler {
  private abortExchange: ((reason: Error) => void) | undefined;
  /** Why the exchange was aborted before undici gave it a connection: aborted as soon as it does. */
  private abortedEarly: Error | undefined;
  private resumeReading: (() => void) | undefined;
  private held: Buffer[] = [];
  private heldBytes = 0;
  private out: Writable | undefined;
  private complete = false;
  private answered = false;
  private finished = false;
  /** How the body failed, if it did before the response was handed over. */
  private cut: Error | undefined;
  private settleBody: { resolve(): void; reject(err: Error): void } | undefined;

  constructor(private readonly outcome: ExchangeOutcome) {}

  /** Whether undici has given the exchange a connection (at once, from dispatch, when a kept one was free). */
  get connected(): boolean {
    return this.abortExchange !== undefined;
  }

  /** Ends the exchange (the client left, or a deadline passed): before a connection, the failure is at once. */
  abort(reason: Error): void {
    if (this.abortExchange) return this.abortExchange(reason);
    this.abortedEarly ??= reason;
    this.onError(reason);
  }

  onConnect(abort: (reason?: Error) => void): void {
    this.abortExchange = abort;
    if (this.abortedEarly) abort(this.abortedEarly);
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // Interim answers (100 Continue, 103 Early Hints) come here too; the final one follows.
    if (status < 200 || this.finished) return true;
    this.answered = true;
    this.resumeReading = resume;
    this.outcome.answered(status, headersBack(rawHeaders), (out) => this.writeBody(out));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.out) return this.out.write(chunk);
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    return this.heldBytes < HELD_BYTES;
  }

  onComplete(): void {
    this.complete = true;
    if (this.settleBody) this.settleBody.resolve();
    this.end();
  }

  onError(err: Error): void {
    if (this.finished) return;
    if (!this.answered) this.outcome.failed(err);
    else if (this.settleBody) this.settleBody.reject(err);
    else this.cut = err;
    this.end();
  }

  private end(): void {
    if (this.finished) return;
    this.finished = true;
    this.out?.off('drain', this.onDrain);
    this.outcome.over();
  }

  private readonly onDrain = () => this.resumeReading?.();

  /** The body into the client's response (core's StreamedResponse writer): resolves at its end, rejects if cut. */
  private writeBody(out: Writable): Promise<void> {
    const held = this.held;
    this.held = [];
    if (this.cut) {
      // Cut within its body before the response was handed over: the head and what came go out, then the cut.
      for (const chunk of held) out.write(chunk);
      return Promise.reject(this.cut);
    }
    if (this.complete) {
      // The head and the whole body in one write (Node corks an end with its head).
      if (held.length > 0) out.end(held.length === 1 ? held[0] : Buffer.concat(held, this.heldBytes));
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      // Settled from here on by onComplete or onError, which resuming may call at once.
      this.settleBody = { resolve, reject };
      this.out = out;
      for (const chunk of held) out.write(chunk);
      out.on('drain', this.onDrain);
      // Reading stopped once HELD_BYTES were held: it goes on now, or when the response has drained.
      if (!out.writableNeedDrain) this.resumeReading?.();
    });
  }
}

import { Writable, type Readable } from 'node:stream';
import type { BodyWriter } from '@tkgate/core';
import { CONTENT_LENGTH } from './response-head.js';
import type { UpstreamTls } from './upstream-tls.js';
import { UpstreamFailure, withUpstreamStatus } from './upstream-failure.js';

/** One upstream call: what the http endpoint type needs of an HTTP client, and no more. */
export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Streamed answers: the timeout bounds the wait for headers and each silence, not the whole download. */
  streamed: boolean;
  /**
   * Calls share kept connections only within one group and one caller: the endpoint's credentials (its
   * configured headers and TLS material), and the user the call is made for. An upstream that sends bytes
   * out of turn (after an answer, or a second answer once the next request has gone out: HTTP/1.1 cannot
   * tell that from an answer) can then only ever reach a call of the same user, with the same credentials.
   */
  connectionGroup: string;
  /** The user the call is made for (EndpointCall.callerId). */
  caller: number;
  /** The endpoint's upstream.tls (CA, client certificate, SNI name), for https:// URLs; its id is part of connectionGroup. */
  tls?: UpstreamTls | undefined;
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

/** A streamed answer (passthrough). */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The exact number of body bytes, when the answer is framed by a length it will keep to. */
  contentLength: number | undefined;
  /**
   * The body as it arrives: a stream, or a writer that streams it into the client's response itself (the
   * reader, without copies). Failures after the head (reset, timeout) surface as the stream's errors or the
   * writer's rejection; they end the client's connection.
   */
  body: Readable | BodyWriter;
  /** Drops the answer without reading its body (non-2xx answers). */
  discard(): void;
}

/**
 * An HTTP client for upstream calls: undici and the gateway's own HTTP/1.1 reader each implement it,
 * fail only with UpstreamFailure (their own errors classified, upstream-failure.ts), and pass one
 * conformance suite (test/http/unit/transport-conformance.test.ts).
 */
export interface UpstreamTransport {
  /** The answer as a stream (passthrough). */
  post(request: UpstreamRequest): Promise<UpstreamResponse>;
  /** The whole answer of at most `maxBytes` (else a `too_large` failure), for JSON endpoints. */
  fetchWhole(request: UpstreamRequest, maxBytes: number): Promise<UpstreamAnswer>;
  close(): void;
}

export const bodyTooLarge = (message: string) => new UpstreamFailure('too_large', message);

/** A length in its one valid form, without Transfer-Encoding: the exact number of bytes that will follow. */
export function exactLength(headers: UpstreamResponse['headers']): number | undefined {
  const length = headers['content-length'];
  return typeof length === 'string' && CONTENT_LENGTH.test(length) && headers['transfer-encoding'] === undefined ? Number(length) : undefined;
}

/**
 * A library's answer refused as the reader refuses it (RFC 9112 6.3): a transfer coding other than plain
 * `chunked` (undici decodes `gzip, chunked` as chunked and passes gzip bytes on as if they were the
 * body). The failure to throw; undefined when the framing is fine.
 */
export function refusedFraming(headers: UpstreamResponse['headers']): UpstreamFailure | undefined {
  const coding = headers['transfer-encoding'];
  if (coding === undefined || (typeof coding === 'string' && coding.trim().toLowerCase() === 'chunked')) return undefined;
  // No upstream_status, as from the reader: an answer whose head is refused is no answer.
  return new UpstreamFailure('invalid_response', `Transfer-Encoding ${JSON.stringify(coding)} is not plain chunked`);
}

/**
 * Resolves once a streamed body has its first bytes or its end, or rejects with its first error: a
 * library's streamed answer is handed on only then, as the reader's is, so that a malformed first chunk
 * fails the call (502) before the client has any answer. Leaves the stream paused for its reader.
 */
export function firstBytes(body: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (err?: Error) => {
      body.off('readable', onReadable);
      body.off('error', settle);
      if (err) reject(err);
      else resolve();
    };
    const onReadable = () => settle();
    body.on('readable', onReadable);
    body.on('error', settle);
  });
}

/** A streamed answer read whole within `maxBytes` (a non-2xx one not at all); `classify` names its body's errors. */
export async function readWhole(response: UpstreamResponse, maxBytes: number, classify: (err: unknown) => UpstreamFailure): Promise<UpstreamAnswer> {
  if (response.status < 200 || response.status > 299) {
    response.discard();
    return { status: response.status, body: Buffer.alloc(0) };
  }
  const declared = Number(response.headers['content-length']);
  if (declared > maxBytes) {
    response.discard();
    throw withUpstreamStatus(bodyTooLarge(`upstream declared ${declared} bytes, over ${maxBytes}`), response.status);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const keep = (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBytes) throw bodyTooLarge(`upstream body over ${maxBytes} bytes`);
    chunks.push(chunk);
  };
  try {
    if (typeof response.body === 'function') {
      const out = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          try {
            keep(Buffer.from(chunk));
            callback();
          } catch (err) {
            callback(err as Error);
          }
        },
      });
      // The writer hears the failure through its write callback; the stream's own 'error' event is not needed.
      out.on('error', () => undefined);
      await response.body(out);
    } else {
      for await (const chunk of response.body) keep(chunk as Buffer);
    }
  } catch (err) {
    response.discard();
    throw withUpstreamStatus(classify(err), response.status);
  }
  return { status: response.status, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
}

/**
 * Refuses an answer that names another request (`sent`: the request's X-Request-Id). An upstream that echoes X-Request-Id binds each answer to
 * its request: an answer with another id is one it sent out of turn (a second answer to an earlier request,
 * read as the answer to this one), refused before any of it is used. The failure to throw (the caller also
 * destroys the connection, whose next bytes would be this request's late answer); undefined when the answer
 * carries no id or this request's.
 */
export function answersAnother(sent: string | undefined, echoed: string | string[] | undefined): UpstreamFailure | undefined {
  if (echoed === undefined || sent === undefined || echoed === sent) return undefined;
  // No upstream_status: it is not this request's answer.
  return new UpstreamFailure('request_id_mismatch', 'the upstream answered with the X-Request-Id of another request');
}

/** A group unused for this long has its agent closed: longer than any agent keeps an idle connection. */
const GROUP_IDLE_MS = 30_000;

/**
 * A transport's keep-alive agents: one per connection group and caller (UpstreamRequest), made on first use with the group's TLS material. There is a group per user, so a group left
 * unused for GROUP_IDLE_MS is handed to `retire`, which closes its agent and says true, or says false while
 * it still has calls running (it is offered again at the next sweep).
 */
export function perGroup<T>(
  make: (tls: UpstreamTls | undefined) => T,
  retire: (agent: T) => boolean,
): { of(request: Pick<UpstreamRequest, 'connectionGroup' | 'caller' | 'tls'>): T; all(): Iterable<T>; close(): void } {
  // By credentials, then by caller: the first key is one string per endpoint (its hash kept), the second a number.
  const groups = new Map<string, Map<number, { agent: T; used: boolean }>>();
  const sweep = setInterval(() => {
    for (const [key, callers] of groups) {
      for (const [caller, group] of callers) {
        if (group.used) group.used = false;
        else if (retire(group.agent)) callers.delete(caller);
      }
      if (callers.size === 0) groups.delete(key);
    }
  }, GROUP_IDLE_MS).unref();
  return {
    of(request) {
      let callers = groups.get(request.connectionGroup);
      if (!callers) groups.set(request.connectionGroup, (callers = new Map()));
      let group = callers.get(request.caller);
      if (!group) callers.set(request.caller, (group = { agent: make(request.tls), used: true }));
      else group.used = true;
      return group.agent;
    },
    *all() {
      for (const callers of groups.values()) for (const group of callers.values()) yield group.agent;
    },
    close() {
      clearInterval(sweep);
      groups.clear();
    },
  };
}

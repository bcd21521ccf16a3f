import { koaBody } from 'koa-body';
import { GatewayError, internalError, invalidPayload, payloadTooLarge, requestTimeout } from '../errors.js';
import type { GatewayContext, GatewayMiddleware } from './context.js';
import { parseJsonText, parseTextFields } from './payload-parsers.js';

/**
 * Body readers by byte limit, made once: building one validates its options, which is not free.
 * koa-body reads the text (limit, Content-Encoding, UTF-8); payload-parsers.ts parses it, with limits
 * koa-body's parsers do not have (nesting depth, prototype keys).
 */
const readers = new Map<number, GatewayMiddleware>();

function readerFor(limit: number): GatewayMiddleware {
  let reader = readers.get(limit);
  if (!reader) {
    reader = koaBody({
      json: false,
      urlencoded: false,
      multipart: false,
      text: true,
      textTypes: ['*/*'],
      textLimit: limit,
      encoding: 'utf-8',
    }) as unknown as GatewayMiddleware;
    readers.set(limit, reader);
  }
  return reader;
}

/** A request header as Koa's ctx.get gives it ('' when absent), read from Node's headers without Koa's delegate. */
const headerOf = (ctx: GatewayContext, name: 'content-length' | 'transfer-encoding' | 'content-type' | 'content-encoding'): string =>
  ctx.req.headers[name] ?? '';

/** Content-Length is digits only (Node's HTTP parser refuses anything else); Number() is exact up to 2^53. */
const declaredLength = (ctx: GatewayContext): number => Number(headerOf(ctx, 'content-length') || 0);

export const hasBody = (ctx: GatewayContext): boolean => declaredLength(ctx) > 0 || headerOf(ctx, 'transfer-encoding') !== '';

export interface BodyLimits {
  /** The endpoint's client_filter.max_body_bytes: past it, 400 invalid_payload. */
  endpointMax: number | undefined;
  /** server.max_body_bytes: past it, 413. */
  serverMax: number;
  allowedContentTypes: readonly string[];
  /** server.body_timeout: the body must have arrived this long after reading began (0: no bound), else 408. */
  timeoutMs: number;
}

/** A body of another allowed type than JSON or a form: its bytes as received, with its Content-Type. */
export interface RawBody {
  contentType: string;
  bytes: Buffer;
}

/** The body types parsed into the payload; any other allowed one is passed as received (RawBody). */
export const PARSEABLE_CONTENT_TYPES = ['application/json', 'application/x-www-form-urlencoded'] as const;
const isParsed = (type: string): boolean => (PARSEABLE_CONTENT_TYPES as readonly string[]).includes(type);

/** A body as read: its payload, whether it was a form, its text, a body passed as received, and (keepRaw) its bytes. */
export interface ReadBody {
  /** JSON or a form's fields; an empty object for a body passed as received; undefined while kept bytes await their check (parseReadBody). */
  body: unknown;
  form: boolean;
  text?: string;
  /** A body of another allowed type (text/plain, XML, octet-stream), not parsed. */
  raw?: RawBody;
  /** keepRaw: the body's bytes exactly as received (what a signature covers). */
  bytes?: Buffer;
}

/**
 * Reads a POST body as JSON or a form, within the limits; nothing is read past them (a Content-Length
 * over the limit is refused before the first byte). Every client mistake is a 4xx naming the field. A body of
 * another allowed type (text/plain, XML, octet-stream) is read as bytes, not parsed (`raw`): it is passed as
 * received by a type that forwards the request. With `keepRaw` the bytes are kept as received (`bytes`, never
 * decompressed or decoded first) and a JSON or form body is left for parseReadBody: an unsigned body is never parsed.
 */
export async function readPayloadBody(ctx: GatewayContext, limits: BodyLimits, keepRaw = false): Promise<ReadBody> {
  if (!hasBody(ctx)) return { body: Object.create(null), form: false, ...(keepRaw && { bytes: Buffer.alloc(0) }) };
  // The usual header, exactly, needs no parsing (type-is parsed it twice per request).
  const plainJson = headerOf(ctx, 'content-type') === 'application/json' && limits.allowedContentTypes.includes('application/json');
  const matched = plainJson ? 'application/json' : ctx.is(...limits.allowedContentTypes);
  if (!matched) {
    throw invalidPayload([
      { field: 'content-type', rule: 'allowed_content_types', message: `the body must be one of: ${limits.allowedContentTypes.join(', ')}` },
    ]);
  }
  if (!isParsed(matched)) {
    const bytes = await readBodyBytes(ctx, limits, 'a body passed as received must not be compressed');
    return { body: Object.create(null), form: false, raw: { contentType: headerOf(ctx, 'content-type'), bytes }, ...(keepRaw && { bytes }) };
  }
  const charset = plainJson ? '' : ctx.request.charset.toLowerCase();
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw invalidPayload([{ field: 'content-type', rule: 'charset', message: 'the body must be UTF-8 (charset=utf-8, or no charset)' }]);
  }
  const form = matched === 'application/x-www-form-urlencoded';
  if (keepRaw) {
    const bytes = await readBodyBytes(ctx, limits, 'a signed body must be sent without Content-Encoding');
    return { body: undefined, form, text: utf8Text(bytes), bytes };
  }
  const text = isPlainDeclared(ctx) ? utf8Text(await readBodyBytes(ctx, limits)) : await readWithKoaBody(ctx, limits);
  return { body: parseText(text, form), form, text };
}

/** A body read with its bytes kept, parsed as readPayloadBody parses any other. */
export const parseReadBody = (read: ReadBody): unknown => (read.text === undefined ? read.body : parseText(read.text, read.form));

const parseText = (text: string, form: boolean): unknown => (form ? parseTextFields(text) : parseJsonText(text));

/** UTF-8 text, a BOM dropped as koa-body's decoder does. */
const utf8Text = (bytes: Buffer): string => {
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
};

const endpointBinds = (limits: BodyLimits): boolean => limits.endpointMax !== undefined && limits.endpointMax < limits.serverMax;

/** The byte limit that binds: the endpoint's max_body_bytes when lower, else server.max_body_bytes. */
const bodyLimit = (limits: BodyLimits): number => (endpointBinds(limits) ? limits.endpointMax! : limits.serverMax);

/** A body past bodyLimit: 400 max_body_bytes for the endpoint's limit, 413 for the server's. */
const tooLargeFor = (limits: BodyLimits): GatewayError =>
  endpointBinds(limits)
    ? invalidPayload([{ field: 'body', rule: 'max_body_bytes', message: `the body must be at most ${limits.endpointMax!} bytes` }])
    : payloadTooLarge(limits.serverMax);

/** A failed read as the client's answer: past the limit (tooLargeFor), the client's mistake (4xx), else internal; the connection closed. */
function readFailure(ctx: GatewayContext, limits: BodyLimits, err: unknown): GatewayError {
  if (err instanceof GatewayError) return unreadBody(ctx, err);
  if ((err as { status?: number }).status === 413) return unreadBody(ctx, tooLargeFor(limits));
  return unreadBody(ctx, clientMistake(err) ?? internalError(err));
}

/**
 * The one reader of a body's bytes as received: uncompressed only (`compressed` is the refusal's message), within the
 * binding limit (a declared length past it is refused before the first byte), within server.body_timeout.
 */
async function readBodyBytes(ctx: GatewayContext, limits: BodyLimits, compressed = 'the body must not be compressed'): Promise<Buffer> {
  if (!isIdentityEncoded(ctx)) throw unreadBody(ctx, invalidPayload([{ field: 'content-encoding', rule: 'encoding', message: compressed }]));
  const limit = bodyLimit(limits);
  if (declaredLength(ctx) > limit) throw unreadBody(ctx, tooLargeFor(limits));
  try {
    return await readBytes(ctx, declaredLength(ctx), limit, limits.timeoutMs);
  } catch (err) {
    throw readFailure(ctx, limits, err);
  }
}

/**
 * A body that stalls (a client, or an attacker on the unauthenticated /auth/login, sends the head and part
 * of the body, then nothing) is given up after server.body_timeout: 408, and the connection is closed
 * (unreadBody), which also ends the reader still waiting on it.
 */
function withinBodyTimeout(reading: Promise<string>, timeoutMs: number): Promise<string> {
  if (timeoutMs <= 0) return reading;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(requestTimeout(timeoutMs)), timeoutMs)));
  return Promise.race([reading, expired]).finally(() => clearTimeout(timer));
}

/** A compressed or chunked body: koa-body inflates it and decodes it as UTF-8, within the limit and server.body_timeout. */
async function readWithKoaBody(ctx: GatewayContext, limits: BodyLimits): Promise<string> {
  const limit = bodyLimit(limits);
  // A declared length is checked here, exactly: the readers' own check truncates it to 32 bits.
  if (declaredLength(ctx) > limit) throw unreadBody(ctx, tooLargeFor(limits));
  try {
    return await withinBodyTimeout(
      readerFor(limit)(ctx, async () => undefined).then(() => ctx.request.body as unknown as string),
      limits.timeoutMs,
    );
  } catch (err) {
    throw readFailure(ctx, limits, err);
  }
}

/**
 * A body of a declared length that is not compressed: read by readBodyBytes, not koa-body, whose machinery (raw-body,
 * inflation, co-body) cost a small JSON POST more than its parsing and filtering together (docs/performance.md).
 */
const isPlainDeclared = (ctx: GatewayContext): boolean => declaredLength(ctx) > 0 && headerOf(ctx, 'transfer-encoding') === '' && isIdentityEncoded(ctx);

const isIdentityEncoded = (ctx: GatewayContext): boolean => {
  const encoding = headerOf(ctx, 'content-encoding');
  return encoding === '' || encoding.toLowerCase() === 'identity';
};

/**
 * The body's bytes: exactly `length` when declared (Node's parser delivers no more), else (chunked) at most `limit`
 * (413 past it). A client that stops early gets raw-body's error for it. The body timeout is its own timer, cleared
 * with the listeners: withinBodyTimeout's race and its two promises cost every JSON call.
 */
function readBytes(ctx: GatewayContext, length: number, limit: number, timeoutMs: number): Promise<Buffer> {
  const req = ctx.req;
  const declared = length > 0;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            done();
            reject(requestTimeout(timeoutMs));
          }, timeoutMs)
        : undefined;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        done();
        return reject(Object.assign(new Error('request entity too large'), { status: 413, type: 'entity.too.large' }));
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      if (declared && received !== length)
        return reject(Object.assign(new Error('request size did not match content length'), { status: 400, type: 'request.size.invalid' }));
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onClose = () => {
      done();
      reject(Object.assign(new Error('request aborted'), { status: 400, type: 'request.aborted' }));
    };
    const onError = (err: Error) => {
      done();
      reject(Object.assign(err, { status: 400 }));
    };
    const done = () => {
      if (timer) clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onError);
    };
    // `on`, not `once`: done() removes all four at the first of them, and once's wrappers cost every body read.
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
    req.on('error', onError);
  });
}

/**
 * A body refused before its end: the connection is closed after the answer rather than kept for the rest
 * of a body that may never come (a Content-Length of 2 GB with 10 bytes sent).
 */
function unreadBody(ctx: GatewayContext, error: GatewayError): GatewayError {
  ctx.set('Connection', 'close');
  return error;
}

/** Error codes of node:zlib streams: Z_DATA_ERROR, Z_BUF_ERROR (cut short), ERR__ERROR_FORMAT_… (brotli). */
const DECOMPRESSION_ERROR = /^(?:Z_|ERR__ERROR_|ERR_BROTLI)/;

/** raw-body, inflation and zlib errors are the client's mistakes; anything else stays internal (undefined). */
function clientMistake(err: unknown): GatewayError | undefined {
  const failure = err as { status?: number; type?: string; code?: string };
  const problem = (field: string, rule: string, message: string) => invalidPayload([{ field, rule, message }], 'the request body could not be read');
  if (typeof failure.code === 'string' && DECOMPRESSION_ERROR.test(failure.code)) {
    return problem('body', 'encoding', 'the body is not valid data of its Content-Encoding');
  }
  if (failure.type === 'encoding.unsupported' || failure.status === 415) {
    return problem('content-encoding', 'encoding', 'Content-Encoding must be gzip, deflate, br or identity');
  }
  if (failure.type === 'request.size.invalid') return problem('body', 'syntax', 'the body is shorter or longer than its Content-Length');
  if (typeof failure.status === 'number' && failure.status >= 400 && failure.status < 500) return problem('body', 'syntax', 'the body could not be read');
  return undefined;
}

export function asPayloadObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidPayload([{ field: 'body', rule: 'type', message: 'the payload must be a JSON object' }]);
  }
  return body as Record<string, unknown>;
}

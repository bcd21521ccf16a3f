import { koaBody } from 'koa-body';
import { invalidPayload, payloadTooLarge } from '../errors.js';
import type { GatewayContext, GatewayMiddleware } from './context.js';

/** Body parsers by byte limit, made once: building one validates its options, which is not free. */
const parsers = new Map<number, GatewayMiddleware>();

function parserFor(limit: number): GatewayMiddleware {
  let parser = parsers.get(limit);
  if (!parser) {
    parser = koaBody({ json: true, urlencoded: true, jsonStrict: false, jsonLimit: limit, formLimit: limit, text: false, multipart: false }) as unknown as GatewayMiddleware;
    parsers.set(limit, parser);
  }
  return parser;
}

const hasBody = (ctx: GatewayContext): boolean => (ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '';

export interface BodyLimits {
  /** The endpoint's client_filter.max_body_bytes: past it, 400 invalid_payload. */
  endpointMax: number | undefined;
  /** server.max_body_bytes: past it, 413. */
  serverMax: number;
  allowedContentTypes: readonly string[];
}

/**
 * Reads a POST body as JSON or a form, within the limits; nothing is read past them
 * (a Content-Length over the limit is refused before the first byte).
 */
export async function readPayloadBody(ctx: GatewayContext, limits: BodyLimits): Promise<{ body: unknown; form: boolean }> {
  if (!hasBody(ctx)) return { body: {}, form: false };
  const matched = ctx.is(...limits.allowedContentTypes);
  if (!matched) {
    throw invalidPayload([
      { field: 'content-type', rule: 'allowed_content_types', message: `the body must be one of: ${limits.allowedContentTypes.join(', ')}` },
    ]);
  }
  const endpointBinds = limits.endpointMax !== undefined && limits.endpointMax < limits.serverMax;
  const limit = endpointBinds ? limits.endpointMax! : limits.serverMax;
  try {
    await parserFor(limit)(ctx, async () => undefined);
  } catch (err) {
    throw unreadableBody(err, ctx, endpointBinds ? limit : undefined);
  }
  return { body: ctx.request.body, form: matched === 'application/x-www-form-urlencoded' };
}

/**
 * The body parser's errors (raw-body, co-body) carry an HTTP status and a type: they become our own
 * errors here, where they are known to come from the parser, never from a status found on any error.
 */
function unreadableBody(err: unknown, ctx: GatewayContext, endpointLimit: number | undefined): unknown {
  const parserError = err as { status?: number; type?: string; limit?: number };
  const status = parserError?.status;
  if (status === 413 && endpointLimit !== undefined) {
    return invalidPayload([{ field: 'body', rule: 'max_body_bytes', message: `the body must be at most ${endpointLimit} bytes` }]);
  }
  if (status === 413) return payloadTooLarge(parserError.limit ?? Number(ctx.get('content-length')));
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return invalidPayload([{ field: 'body', rule: 'syntax', message: describeParserError(err as Error, parserError.type) }], 'the request body could not be read');
  }
  return err;
}

function describeParserError(error: Error, type: string | undefined): string {
  if (error instanceof SyntaxError) return 'the body is not valid JSON';
  if (type === 'request.size.invalid') return 'the body is shorter or longer than its Content-Length';
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return 'the body encoding is not supported';
  return 'the body could not be read';
}

export function asPayloadObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidPayload([{ field: 'body', rule: 'type', message: 'the payload must be a JSON object' }]);
  }
  return body as Record<string, unknown>;
}


import { GatewayError, internalError, payloadTooLarge } from '../errors.js';
import type { Logger } from '../log.js';
import type { GatewayContext, GatewayMiddleware } from './context.js';

/**
 * The one place where errors become responses. GatewayErrors keep their status and code;
 * anything else is a 500 whose cause goes to the log only (no stack or message leaks out).
 */
export function errorEnvelope(log: Logger): GatewayMiddleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      const error = toGatewayError(thrown, ctx);
      // 503 busy is load shedding, answered on purpose and counted where it happens: not an error line each.
      if (error.status >= 500 && error.code !== 'busy') {
        log.error('request failed', { request_id: ctx.state.requestId, path: ctx.path, code: error.code, err: error.cause ?? thrown });
      } else {
        log.debug('request refused', { request_id: ctx.state.requestId, path: ctx.path, code: error.code, status: error.status });
      }
      sendError(ctx, error);
    }
  };
}

export function sendError(ctx: GatewayContext, error: GatewayError): void {
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  const body: Record<string, unknown> = { code: error.code, message: error.message };
  if (error.details !== undefined) body.details = error.details;
  ctx.body = { success: false, request_id: ctx.state.requestId, endpoint: ctx.path, error: body };
}

/** Body-parser errors (raw-body, co-body) carry an HTTP status and a type; everything else is internal. */
function toGatewayError(thrown: unknown, ctx: GatewayContext): GatewayError {
  if (thrown instanceof GatewayError) return thrown;
  const parserError = thrown as { status?: number; type?: string; limit?: number };
  const status = parserError?.status;
  if (status === 413) return payloadTooLarge(parserError.limit ?? Number(ctx.get('content-length')));
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new GatewayError(400, 'invalid_payload', 'the request body could not be read', {
      details: [{ field: 'body', rule: 'syntax', message: describeParserError(thrown as Error, parserError.type) }],
    });
  }
  return internalError(thrown);
}

function describeParserError(error: Error, type: string | undefined): string {
  if (error instanceof SyntaxError) return 'the body is not valid JSON';
  if (type === 'request.size.invalid') return 'the body is shorter or longer than its Content-Length';
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return 'the body encoding is not supported';
  return 'the body could not be read';
}

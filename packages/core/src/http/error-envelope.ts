import { unavailableWhenDatabaseFailed } from '../db/database-errors.js';
import { asExposedHttpError, asGatewayError, internalError, type GatewayErrorShape } from '../errors.js';
import type { Logger } from '../log.js';
import type { SecretMask } from '../secrets/secret-mask.js';
import type { GatewayContext, GatewayMiddleware } from './context.js';

/**
 * The one place where errors become responses. GatewayErrors (of any copy of core) keep their status
 * and code; Koa's `ctx.throw(4xx)` (middleware of the Koa ecosystem) keeps its status and message; anything else is a 500 whose cause goes to the log only (no stack or message leaks out).
 * A cause always reaches the log: at error level for 5xx, at warn below.
 */
export function errorEnvelope(log: Logger, mask?: SecretMask): GatewayMiddleware {
  // Not async: one promise fewer on every request.
  return (ctx, next) => next().catch((thrown: unknown) => answerError(log, ctx, thrown, mask));
}

/**
 * What errorEnvelope does with what it catches: the envelope for the client, the cause for the log. With a mask, a message or details that quote a secret value the gateway handed out (a plugin's careless
 * error) say `***`.
 */
export function answerError(log: Logger, ctx: GatewayContext, thrown: unknown, mask?: SecretMask): void {
  const error = unavailableWhenDatabaseFailed(asGatewayError(thrown) ?? asExposedHttpError(thrown) ?? internalError(thrown), thrown);
  logError(log, ctx, error, thrown);
  if (!mask || mask.empty) sendError(ctx, error);
  else sendError(ctx, { ...error, message: mask.mask(error.message), details: mask.maskData(error.details) });
}

function logError(log: Logger, ctx: GatewayContext, error: GatewayErrorShape, thrown: unknown): void {
  const fields = { request_id: ctx.state.requestId, path: ctx.path, status: error.status, code: error.code };
  // 503 busy is load shedding, answered on purpose and counted where it happens: not an error line each.
  // A failure outside the gateway that the answer explains (a command's exit code): a warn line, no stack.
  if (error.status >= 500 && error.logLevel === 'warn') log.warn('request failed', { ...fields, details: error.details });
  else if (error.status >= 500 && error.code !== 'busy') log.error('request failed', { ...fields, err: error.cause ?? thrown });
  else if (error.cause !== undefined) log.warn('request refused', { ...fields, err: error.cause });
  else log.debug('request refused', fields);
}

export function sendError(ctx: GatewayContext, error: GatewayErrorShape): void {
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers ?? {})) ctx.set(name, value);
  const body: Record<string, unknown> = { code: error.code, message: error.message };
  if (error.details !== undefined) body.details = error.details;
  ctx.body = { success: false, request_id: ctx.state.requestId, endpoint: ctx.path, error: body };
}

import { CORE_ERROR_CODES, ERROR_CODE_PATTERN, isErrorStatus, type CoreErrorCode } from './error-codes.js';
import { headersProblem } from './header-rules.js';

/**
 * The one error family of tkgate. Anything thrown inside a request that is a GatewayError
 * becomes the error envelope with its status, code and details (see http/error-envelope.ts);
 * anything else becomes a 500 `internal_error` whose cause is only logged.
 *
 * GatewayErrors are recognised by a brand, not by their class: a plugin may bring its own copy of
 * @tkgate/core (npm nests one when versions differ), and its errors must keep their status and code.
 * `instanceof GatewayError` checks the brand too, so it holds across copies.
 */
export interface GatewayErrorOptions {
  details?: unknown;
  headers?: Record<string, string>;
  cause?: unknown;
  /**
   * (1.5) `warn`: a 5xx that is no fault of the gateway and that status, code and details explain (a command
   * that exited non-zero): logged as one warn line with the details, without the cause's stack.
   */
  logLevel?: 'warn';
}

/** Shared by every copy of @tkgate/core in a process (Symbol.for is process-wide by design). */
const GATEWAY_ERROR = Symbol.for('tkgate.GatewayError');

export class GatewayError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;
  readonly headers: Record<string, string>;
  readonly logLevel: 'warn' | undefined;

  constructor(status: number, code: string, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.status = status;
    this.code = code;
    this.details = options.details;
    this.headers = options.headers ?? {};
    this.logLevel = options.logLevel;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this !== GatewayError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return isBranded(value);
  }
}
Object.defineProperty(GatewayError.prototype, GATEWAY_ERROR, { value: true });

/** The fields core reads from a GatewayError of any copy. */
export interface GatewayErrorShape {
  status: number;
  code: string;
  message: string;
  details?: unknown;
  headers?: Record<string, string>;
  cause?: unknown;
  logLevel?: 'warn' | undefined;
}

function isBranded(value: unknown): value is GatewayErrorShape {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[GATEWAY_ERROR] === true;
}

/**
 * A GatewayError from any copy of core whose status (400-599), code and headers can go to a client; undefined for
 * anything else, including foreign errors that merely have a `status`. A branded error with a bad
 * status or code is a bug of its thrower: the caller treats it as internal.
 */
export function asGatewayError(value: unknown): GatewayErrorShape | undefined {
  if (!isBranded(value)) return undefined;
  if (!isErrorStatus(value.status) || typeof value.code !== 'string' || !ERROR_CODE_PATTERN.test(value.code)) return undefined;
  if (typeof value.message !== 'string' || headersProblem(value.headers) !== undefined) return undefined;
  return value;
}

/** The code of a Koa `ctx.throw(status)` by its status; another 4xx is `client_error` with its own status. */
const HTTP_ERROR_CODES: Readonly<Record<number, CoreErrorCode>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/**
 * Koa's `ctx.throw(4xx)` (an http-errors error, as koa-bodyparser, koa-jwt and rate limiters throw): its status,
 * message and headers are meant for the client (`expose`, which http-errors sets below 500 only), so it is
 * answered as such, with a code for its status. Undefined for anything else (a 5xx, an unexposed error).
 */
export function asExposedHttpError(value: unknown): GatewayError | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { expose, status, message, headers } = value as { expose?: unknown; status?: unknown; message?: unknown; headers?: unknown };
  if (expose !== true || !isErrorStatus(status) || status >= 500 || typeof message !== 'string') return undefined;
  const answerHeaders =
    typeof headers === 'object' && headers !== null ? Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, String(value)])) : {};
  return new GatewayError(status, HTTP_ERROR_CODES[status] ?? 'client_error', message, {
    headers: headersProblem(answerHeaders) === undefined ? answerHeaders : {},
  });
}

/** An error with one of core's declared codes (error-codes.ts); the status comes from the table. */
export const coreError = (code: CoreErrorCode, message: string, options?: GatewayErrorOptions): GatewayError =>
  new GatewayError(CORE_ERROR_CODES[code].status, code, message, options);

/** One failed check of a request field: which field, which rule, and why. */
export interface FieldProblem {
  field: string;
  rule: string;
  message: string;
}

export const invalidPayload = (problems: FieldProblem[], message = 'the request payload is invalid'): GatewayError =>
  coreError('invalid_payload', message, { details: problems });

export const payloadTooLarge = (limit: number): GatewayError =>
  coreError('payload_too_large', `the request body is larger than ${limit} bytes`, { details: { max_body_bytes: limit } });

export const requestTimeout = (timeoutMs: number): GatewayError =>
  coreError('request_timeout', `the request body did not arrive within ${timeoutMs / 1000} s`, { details: { body_timeout_s: timeoutMs / 1000 } });

export const unauthorized = (message = 'a valid session token is required'): GatewayError => coreError('unauthorized', message);

export const forbidden = (message: string): GatewayError => coreError('forbidden', message);

export const notFound = (code: CoreErrorCode & `${string}not_found`, message: string): GatewayError => coreError(code, message);

export const methodNotAllowed = (allowed: string[]): GatewayError =>
  coreError('method_not_allowed', `method not allowed; allowed: ${allowed.join(', ')}`, { headers: { Allow: allowed.join(', ') } });

export const rateLimited = (retryAfterSeconds: number): GatewayError =>
  coreError('rate_limited', 'too many failed logins; try again later', {
    headers: { 'Retry-After': String(retryAfterSeconds) },
    details: { retry_after_s: retryAfterSeconds },
  });

export const internalError = (cause?: unknown): GatewayError => coreError('internal_error', 'internal error', { cause });

/**
 * The database refused a write that must be durable before the answer (logout, clear-sessions: nothing
 * changed, retry), or failed or did not answer within db.timeout on the request path.
 */
export const unavailable = (cause?: unknown, message = 'the session database refused the change; nothing was changed, try again'): GatewayError =>
  coreError('unavailable', message, { headers: { 'Retry-After': '1' }, cause });

/**
 * The one error family of tkgate. Anything thrown inside a request that is a GatewayError
 * becomes the error envelope with its status, code and details (see http/error-envelope.ts);
 * anything else becomes a 500 `internal_error` whose cause is only logged.
 */
export interface GatewayErrorOptions {
  details?: unknown;
  headers?: Record<string, string>;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.status = status;
    this.code = code;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

/** One failed check of a request field: which field, which rule, and why. */
export interface FieldProblem {
  field: string;
  rule: string;
  message: string;
}

export const invalidPayload = (problems: FieldProblem[], message = 'the request payload is invalid'): GatewayError =>
  new GatewayError(400, 'invalid_payload', message, { details: problems });

export const payloadTooLarge = (limit: number): GatewayError =>
  new GatewayError(413, 'payload_too_large', `the request body is larger than ${limit} bytes`, {
    details: { max_body_bytes: limit },
  });

export const unauthorized = (message = 'a valid session token is required'): GatewayError =>
  new GatewayError(401, 'unauthorized', message);

export const forbidden = (message: string): GatewayError => new GatewayError(403, 'forbidden', message);

export const notFound = (code: string, message: string): GatewayError => new GatewayError(404, code, message);

export const methodNotAllowed = (allowed: string[]): GatewayError =>
  new GatewayError(405, 'method_not_allowed', `method not allowed; allowed: ${allowed.join(', ')}`, {
    headers: { Allow: allowed.join(', ') },
  });

export const rateLimited = (retryAfterSeconds: number): GatewayError =>
  new GatewayError(429, 'rate_limited', 'too many failed logins; try again later', {
    headers: { 'Retry-After': String(retryAfterSeconds) },
    details: { retry_after_s: retryAfterSeconds },
  });

export const internalError = (cause?: unknown): GatewayError =>
  new GatewayError(500, 'internal_error', 'internal error', { cause });

/** The database refused a write that must be durable before the answer (logout, clear-sessions): nothing changed, retry. */
export const unavailable = (cause?: unknown): GatewayError =>
  new GatewayError(503, 'unavailable', 'the session database refused the change; nothing was changed, try again', {
    headers: { 'Retry-After': '1' },
    cause,
  });

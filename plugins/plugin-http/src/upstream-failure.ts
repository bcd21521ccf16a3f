import { GatewayError } from '@tkgate/core';

/**
 * Why an upstream call gave no usable answer: the one vocabulary every upstream call (undici's and the reader's
 * transports, a forwarded request, a WebSocket's handshake) classifies its failures into; what the balancer makes
 * of a failed attempt (attemptFailureOf); and the only place the 502 `upstream_error` and the 504
 * `upstream_timeout` are built (upstreamError, upstreamTimeout, answerOfFailure).
 */
export type FailureReason = 'timeout' | 'connection' | 'invalid_response' | 'request_id_mismatch' | 'too_large' | 'aborted';

export class UpstreamFailure extends Error {
  /** The status of an answer whose head had arrived (`details.upstream_status`). */
  readonly upstreamStatus: number | undefined;

  constructor(
    readonly reason: FailureReason,
    message: string,
    options: { cause?: unknown; upstreamStatus?: number } = {},
  ) {
    super(message, { cause: options.cause });
    this.upstreamStatus = options.upstreamStatus;
  }
}

/** An answer whose HTTP/1.1 message is malformed or ambiguous (RFC 9112): refused, never forwarded. */
export const badResponse = (message: string) => new UpstreamFailure('invalid_response', message);

/** A failure with the status of the answer it cut. */
export const withUpstreamStatus = (failure: UpstreamFailure, status: number): UpstreamFailure =>
  failure.upstreamStatus === undefined ? new UpstreamFailure(failure.reason, failure.message, { cause: failure.cause, upstreamStatus: status }) : failure;

/** Error codes of a connection that was never made: the request cannot have reached the upstream. */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * True when a failed call was never sent: its connection was refused or timed out while connecting (the
 * library's error, somewhere in the cause chain, says so). Such a call may go to another target whatever
 * its method; any other failure may have reached the upstream.
 */
export function notSent(err: unknown): boolean {
  if (!(err instanceof UpstreamFailure) || err.upstreamStatus !== undefined) return false;
  if (err.reason !== 'connection' && err.reason !== 'timeout') return false;
  return neverConnected(err);
}

/** Whether an error, or one in its cause chain, says its connection was never made. */
export function neverConnected(err: unknown): boolean {
  for (let cause: unknown = err, depth = 0; cause instanceof Error && depth < 6; cause = cause.cause, depth++) {
    const { code, event } = cause as { code?: string; event?: string };
    if ((code !== undefined && NEVER_CONNECTED.has(code)) || event === 'connect' || event === 'lookup') return true;
  }
  return false;
}

/** How a call to one target ended: the `outcome` label of tkgate_upstream_requests_total. */
export type Outcome = 'ok' | 'status_5xx' | 'not_sent' | 'timeout' | 'failed' | 'invalid' | 'aborted';

/** What a failed attempt was: its outcome, and whether the upstream may have received the request. */
export interface AttemptFailure {
  outcome: Outcome;
  sent: boolean;
}

/**
 * A failed attempt as the balancer sees it (targets.ts): the client gone, never sent (may go to another target
 * whatever the method), a timeout, an answer cut or refused (a 5xx one counts against the target), a connection lost.
 */
export function attemptFailureOf(err: unknown): AttemptFailure {
  if (!(err instanceof UpstreamFailure)) return { outcome: 'failed', sent: true };
  if (err.reason === 'aborted') return { outcome: 'aborted', sent: true };
  if (notSent(err)) return { outcome: 'not_sent', sent: false };
  if (err.reason === 'timeout') return { outcome: 'timeout', sent: true };
  if (err.upstreamStatus !== undefined) return { outcome: err.upstreamStatus >= 500 ? 'status_5xx' : 'invalid', sent: true };
  if (err.reason === 'connection') return { outcome: 'failed', sent: true };
  return { outcome: 'invalid', sent: true };
}

/** `details.reason` of the 502: a failure's reason, what was wrong with an answer (proxy.ts), or no target left. */
export type UpstreamErrorReason = FailureReason | 'status' | 'invalid_json' | 'too_deep' | 'no_healthy_target';

/** The 502 upstream_error, with the status of the answer when one came. */
export function upstreamError(reason: UpstreamErrorReason, cause?: unknown, upstreamStatus?: number): GatewayError {
  const details: Record<string, unknown> = { reason };
  if (upstreamStatus !== undefined) details.upstream_status = upstreamStatus;
  const message = reason === 'no_healthy_target' ? 'no target of the upstream is in service' : 'the upstream did not give a usable answer';
  return new GatewayError(502, 'upstream_error', message, { details, cause });
}

/** The 504 upstream_timeout of a call that heard the client's request (forward: request, a WebSocket): `timeout_ms` said. */
export const upstreamTimeout = (timeoutMs: number, cause?: unknown): GatewayError =>
  new GatewayError(504, 'upstream_timeout', 'the upstream did not answer in time', { details: { timeout_ms: timeoutMs }, cause });

/** The answer when every target is out: at once, without trying any. */
export const noHealthyTarget = (): GatewayError => upstreamError('no_healthy_target');

/**
 * A failed call as the client's answer. A GatewayError passes as it is (no target left, a secret that cannot be
 * read); a timeout is the 504 when `timeoutMs` is given (the calls that forward the client's request), else the 502
 * says `timeout`; anything that is not an UpstreamFailure is a connection fault.
 */
export function answerOfFailure(err: unknown, timeoutMs?: number): GatewayError {
  if (err instanceof GatewayError) return err;
  if (!(err instanceof UpstreamFailure)) return upstreamError('connection', err);
  if (err.reason === 'timeout' && timeoutMs !== undefined) return upstreamTimeout(timeoutMs, err);
  return upstreamError(err.reason, err, err.upstreamStatus);
}

/**
 * Why an upstream call gave no usable answer: the one vocabulary every transport classifies its own errors
 * into (got's, undici's and the reader's), and `details.reason` of the 502 (besides `status`, `invalid_json`
 * and `too_deep`, which proxy.ts finds in answers).
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

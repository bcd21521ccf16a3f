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

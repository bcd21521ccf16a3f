import { UpstreamFailure, type FailureReason } from './upstream-failure.js';

/**
 * undici's errors (and node:http's, ws's and llhttp's beneath them), in the transports' one vocabulary.
 * An UpstreamFailure passes as it is.
 */
export function libraryFailure(err: unknown): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  // A library may wrap an error its stream was destroyed with (the transports' own failures).
  const { cause } = err as { cause?: unknown };
  if (cause instanceof UpstreamFailure) return cause;
  const { message } = err as { message?: string };
  return new UpstreamFailure(reasonOf(err), message ?? String(err), { cause: err });
}

function reasonOf(err: unknown): FailureReason {
  const { code, name, message } = err as { code?: string; name?: string; message?: string };
  if (code === 'ETIMEDOUT' || code?.endsWith('_TIMEOUT') || name === 'TimeoutError') return 'timeout';
  if (name === 'AbortError' || code === 'ERR_ABORTED' || code === 'UND_ERR_ABORTED') return 'aborted';
  // Malformed HTTP: llhttp's (undici, node:http) parse errors, and undici's framing checks.
  if (code?.startsWith('HPE_') || name === 'HTTPParserError' || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') return 'invalid_response';
  // undici's words for an unasked 100 Continue or upgrade.
  if (code === 'UND_ERR_SOCKET' && (message === 'bad response' || message === 'bad upgrade')) return 'invalid_response';
  return 'connection';
}

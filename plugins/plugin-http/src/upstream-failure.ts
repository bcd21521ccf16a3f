/** An upstream fault, with a code proxy.ts classifies into `details.reason`. */
export const upstreamFailure = (code: string, message: string): Error & { code: string } => Object.assign(new Error(message), { code });

/** The code of an answer whose HTTP/1.1 message is malformed or ambiguous (RFC 9112): refused, never forwarded. */
export const BAD_RESPONSE = 'ERR_BAD_RESPONSE';
export const badResponse = (message: string) => upstreamFailure(BAD_RESPONSE, message);

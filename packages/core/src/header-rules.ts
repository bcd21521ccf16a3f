/**
 * Headers a plugin may add to an enveloped answer (success or error). The envelope owns the body's
 * framing and the request id; a value with a line break would split the response.
 */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]{0,8192}$/;
const RESERVED = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'trailer',
  'x-request-id',
]);

/** Why these headers cannot be sent, or undefined when they can. */
export function headersProblem(headers: unknown): string | undefined {
  if (headers === undefined) return undefined;
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return 'headers must be an object of strings';
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) return `header name ${JSON.stringify(name)} is not a valid token`;
    if (RESERVED.has(name.toLowerCase())) return `header ${name} is set by the gateway`;
    if (typeof value !== 'string' || !HEADER_VALUE.test(value)) return `header ${name} must be a string without line breaks`;
  }
  return undefined;
}

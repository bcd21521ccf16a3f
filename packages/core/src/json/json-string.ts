/**
 * A string as JSON text, as JSON.stringify writes it. Plain printable ASCII without `"` or `\` (the usual
 * path, route, request id and address) needs no escape and is quoted as it is: about half the time of
 * JSON.stringify for the short strings of every answer's envelope and access line.
 */
export function jsonString(value: string): string {
  return PLAIN_ASCII.test(value) ? `"${value}"` : JSON.stringify(value);
}

const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

import { badResponse } from './upstream-failure.js';

/**
 * The head of an upstream's HTTP/1.1 answer, read strictly (RFC 9112): lines end in CRLF (a bare LF or CR is
 * refused, not guessed at), no folded lines, no space before a colon, and the body's framing is decided
 * once, here, so that nothing ambiguous is ever forwarded.
 */
export interface ResponseHead {
  status: number;
  /** Lower-case names; a repeated field's values joined with ", ". */
  headers: Record<string, string>;
  framing: Framing;
  /** HTTP/1.1 without `Connection: close`: the connection may carry another exchange once this one is fully read. */
  keepAlive: boolean;
  /** How long the upstream says it keeps an idle connection (`Keep-Alive: timeout=N`), in ms, if it says so. */
  keepAliveMs: number | undefined;
}

/** How the body ends (RFC 9112 section 6.3): after `length` bytes, after the last chunk, or when the connection closes. */
export type Framing = { kind: 'length'; length: number } | { kind: 'chunked' } | { kind: 'close' };

const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/;
/** A field line: a token, a colon, the value with optional whitespace around it (also the chunked trailer's lines). */
export const FIELD_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*([\t\x20-\x7e\x80-\xff]*?)[\t ]*$/;
const KEEP_ALIVE_TIMEOUT = /(?:^|[,;\s])timeout=(\d{1,9})(?:$|[,;\s])/i;
/** Longer lengths than 15 digits are beyond anything a gateway streams, and beyond exact arithmetic. */
export const CONTENT_LENGTH = /^\d{1,15}$/;

/** Where the first LF not preceded by CR is; -1 if none. */
export function bareLineFeed(bytes: Buffer): number {
  for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) {
    if (i === 0 || bytes[i - 1] !== 0x0d) return i;
  }
  return -1;
}

/** Parses a head (without its final CRLF CRLF). Throws a bad-response failure on anything malformed or ambiguous. */
export function parseHead(text: string): ResponseHead {
  const [statusLine, ...fieldLines] = text.split('\r\n');
  const statusMatch = STATUS_LINE.exec(statusLine!);
  const status = Number(statusMatch?.[2]);
  if (!status) throw badResponse('the upstream did not answer with an HTTP/1.1 status line');
  const headers: Record<string, string> = {};
  for (const line of fieldLines) {
    const field = FIELD_LINE.exec(line);
    if (!field) throw badResponse('the upstream sent a malformed header line');
    const name = field[1]!.toLowerCase();
    headers[name] = headers[name] === undefined ? field[2]! : `${headers[name]}, ${field[2]}`;
  }
  const closes = (headers.connection ?? '').split(',').some((token) => token.trim().toLowerCase() === 'close');
  const hint = headers['keep-alive'] === undefined ? undefined : KEEP_ALIVE_TIMEOUT.exec(headers['keep-alive']);
  return {
    status,
    headers,
    framing: framingOf(status, headers),
    keepAlive: statusMatch![1] === '1' && !closes,
    keepAliveMs: hint ? Number(hint[1]) * 1000 : undefined,
  };
}

/** RFC 9112 section 6.3, for an answer to a POST; ambiguous or invalid framing is refused (points 3 to 5). */
function framingOf(status: number, headers: Record<string, string>): Framing {
  if (status === 204 || status === 304 || status < 200) return { kind: 'length', length: 0 };
  const transferEncoding = headers['transfer-encoding'];
  const contentLength = headers['content-length'];
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined) throw badResponse('the upstream sent both Transfer-Encoding and Content-Length');
    // Only plain chunked can be forwarded as bytes; any other coding would have to be forwarded with its header.
    if (transferEncoding.toLowerCase() !== 'chunked') throw badResponse(`the upstream used a transfer coding other than chunked (${transferEncoding})`);
    return { kind: 'chunked' };
  }
  if (contentLength !== undefined) {
    const values = contentLength.split(',').map((value) => value.trim());
    if (!values.every((value) => CONTENT_LENGTH.test(value) && value === values[0])) {
      throw badResponse('the upstream sent an invalid Content-Length');
    }
    return { kind: 'length', length: Number(values[0]) };
  }
  return { kind: 'close' };
}

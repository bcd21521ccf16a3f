import { FIELD_LINE } from './response-head.js';
import { badResponse } from './upstream-failure.js';

/** A chunk-size line with its extensions, and the trailer section, may not be longer than this. */
const MAX_LINE_BYTES = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;
/**
 * A chunk-size line (RFC 9112 section 7.1.1): 12 hex digits at most (256 TiB per chunk, exact in a double),
 * then extensions `;name` or `;name=value`, a value a token or a quoted string. No whitespace around them,
 * though the RFC allows it (BWS): Node's parser (llhttp) refuses it, and this decoder accepts nothing it refuses.
 */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~\\x80-\\xff]|\\\\[\\t -~\\x80-\\xff])*"';
const CHUNK_LINE = new RegExp(`^([0-9A-Fa-f]{1,12})(?:;${TOKEN}(?:=(?:${TOKEN}|${QUOTED}))?)*$`);

/** `rest`: bytes of `data` after the end of the body (another message the upstream should not have sent). */
export type ChunkDecoder = (data: Buffer) => { slices: Buffer[]; done: boolean; rest: number };

/**
 * Decodes HTTP/1.1 chunked framing (RFC 9112 section 7.1) across reads; returns views of the data, never
 * copies. Strict: hex sizes only, CRLF after every line and chunk, bounded lines; anything else throws.
 */
export function chunkDecoder(): ChunkDecoder {
  let state: 'size' | 'data' | 'data-cr' | 'data-lf' | 'trailer' | 'done' = 'size';
  let line = '';
  let trailerBytes = 0;
  let remaining = 0;
  return (data) => {
    const slices: Buffer[] = [];
    let i = 0;
    while (i < data.length && state !== 'done') {
      if (state === 'data') {
        const take = Math.min(remaining, data.length - i);
        slices.push(data.subarray(i, i + take));
        remaining -= take;
        i += take;
        if (remaining === 0) state = 'data-cr';
        continue;
      }
      const char = data[i++]!;
      if (state === 'data-cr' || state === 'data-lf') {
        if (char !== (state === 'data-cr' ? 0x0d : 0x0a)) throw badResponse('the upstream sent a chunk without its CRLF');
        state = state === 'data-cr' ? 'data-lf' : 'size';
        continue;
      }
      if (char !== 0x0a) {
        line += String.fromCharCode(char);
        if (line.length > MAX_LINE_BYTES || (state === 'trailer' && ++trailerBytes > MAX_TRAILER_BYTES))
          throw badResponse('the upstream sent an oversized chunk line');
        continue;
      }
      if (!line.endsWith('\r')) throw badResponse('the upstream sent a chunk line without CRLF');
      line = line.slice(0, -1);
      if (state === 'size') {
        const size = CHUNK_LINE.exec(line);
        if (!size) throw badResponse('the upstream sent a malformed chunk size or extension');
        remaining = parseInt(size[1]!, 16);
        state = remaining === 0 ? 'trailer' : 'data';
      } else if (line === '') {
        state = 'done';
      } else if (!FIELD_LINE.test(line)) {
        throw badResponse('the upstream sent a malformed trailer field');
      }
      line = '';
    }
    return { slices, done: state === 'done', rest: data.length - i };
  };
}

/**
 * W3C Trace Context Level 1 (https://www.w3.org/TR/trace-context/): reading an incoming `traceparent`
 * and `tracestate`, writing the ones a callee gets. Invalid values are ignored as the standard says: a bad
 * traceparent starts a new trace, a bad tracestate is dropped whole, and a tracestate without a valid
 * traceparent is never passed on.
 */
import { randomFillSync } from 'node:crypto';

/** The parent a request continues: the caller's trace id, its span id, and its flags (sampled is bit 0). */
export interface RemoteParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly flags: number;
  /** The tracestate to pass on, normalised (members joined by `,`); undefined when absent, empty or invalid. */
  readonly tracestate: string | undefined;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const HEX2 = /^[0-9a-f]{2}$/;
const ALL_ZERO_TRACE = '00000000000000000000000000000000';
const ALL_ZERO_SPAN = '0000000000000000';
/** Optional white space around a header value (RFC 9110: space and tab). */
const OWS = /^[ \t]+|[ \t]+$/g;

/**
 * The parent named by a `traceparent` value, or undefined when it is absent or invalid. Version 00 is
 * exactly 55 characters; a later version (not ff) is read as 00 when its first 55 characters are and what
 * follows starts with `-` (the standard's rule for versions it does not know yet).
 */
export function parseTraceparent(header: string | undefined, tracestate: string | string[] | undefined): RemoteParent | undefined {
  if (header === undefined) return undefined;
  const value = header.replace(OWS, '');
  if (value.length < 55) return undefined;
  const version = value.slice(0, 2);
  if (!HEX2.test(version) || version === 'ff') return undefined;
  if (version === '00' ? value.length !== 55 : value.length > 55 && value[55] !== '-') return undefined;
  if (value[2] !== '-' || value[35] !== '-' || value[52] !== '-') return undefined;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  const flags = value.slice(53, 55);
  if (!TRACE_ID.test(traceId) || traceId === ALL_ZERO_TRACE) return undefined;
  if (!SPAN_ID.test(spanId) || spanId === ALL_ZERO_SPAN) return undefined;
  if (!HEX2.test(flags)) return undefined;
  return { traceId, spanId, flags: parseInt(flags, 16), tracestate: parseTracestate(tracestate) };
}

/** A key: lowercase letter or digit, then up to 255 of `a-z 0-9 _ - * / @`; a value: 1-256 printable characters but `,` and `=`, not ending in a space. */
const MEMBER = /^[0-9a-z][_0-9a-z\-*/@]{0,255}=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
const MAX_MEMBERS = 32;

/**
 * A `tracestate` (one or several header lines, which combine in order) normalised, or undefined when
 * it is absent, empty, or breaks the grammar anywhere (the whole header is then dropped, as the standard asks).
 */
export function parseTracestate(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const members: string[] = [];
  for (const line of typeof header === 'string' ? [header] : header) {
    for (const raw of line.split(',')) {
      const member = raw.replace(OWS, '');
      if (member === '') continue;
      if (!MEMBER.test(member) || members.push(member) > MAX_MEMBERS) return undefined;
    }
  }
  return members.length > 0 ? members.join(',') : undefined;
}

/** A `traceparent` value (version 00). */
export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

/** Random bytes for span ids, drawn from the system 4 KiB at a time (512 ids), the way Node draws its UUIDs. */
const spanIdBytes = Buffer.alloc(4096);
let spanIdOffset = spanIdBytes.length;

/**
 * A new span id: 16 lowercase hex digits, never all zero, read from a buffer of random bytes refilled in
 * batches: a randomBytes call per id would go to the system's random source each time, and an id cut from a
 * random UUID cost the UUID's string and two slices besides the id (docs/performance.md, "The proxied JSON call").
 */
export function newSpanId(): string {
  for (;;) {
    if (spanIdOffset === spanIdBytes.length) {
      randomFillSync(spanIdBytes);
      spanIdOffset = 0;
    }
    const id = spanIdBytes.toString('hex', spanIdOffset, spanIdOffset + 8);
    spanIdOffset += 8;
    // All zero is invalid (a chance of 2^-64): draw again.
    if (id !== ALL_ZERO_SPAN) return id;
  }
}

/**
 * The trace id of a request that continues none: its request id's 32 hex digits (a random UUID: 122
 * random bits, the rightmost 7 bytes all random as Level 2 asks), so a new trace costs no random draw.
 */
export function traceIdOfRequest(requestId: string): string {
  // A UUID's four dashes cut out by position: replaceAll cost ~0.3 µs more per proxied call (docs/performance.md,
  // "The proxied JSON call"). Any other id (a dash left over, another length) takes the general rule.
  if (
    requestId.length === 36 &&
    requestId.charCodeAt(8) === DASH &&
    requestId.charCodeAt(13) === DASH &&
    requestId.charCodeAt(18) === DASH &&
    requestId.charCodeAt(23) === DASH
  ) {
    const cut = requestId.slice(0, 8) + requestId.slice(9, 13) + requestId.slice(14, 18) + requestId.slice(19, 23) + requestId.slice(24);
    if (cut.indexOf('-') === -1) return cut;
  }
  return requestId.replaceAll('-', '');
}

const DASH = 0x2d;

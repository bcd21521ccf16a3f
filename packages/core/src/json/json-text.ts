/**
 * JSON text that goes into an answer as it is, without JSON.parse and JSON.stringify: an upstream's JSON
 * answer, checked in one pass (RFC 8259 grammar, nesting depth) and spliced into the envelope. Parsing a
 * body only to serialise it again cost a proxied request its largest share of garbage (docs/performance.md).
 */

const MARK = Symbol.for('tkgate.JsonText');

/** Checked JSON text: made only by `jsonText`, so the envelope can trust it. */
export interface JsonText {
  readonly text: string;
}

/** Recognises a JsonText of any copy of core. */
export const isJsonText = (value: unknown): value is JsonText =>
  typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARK] === true;

export type JsonTextProblem = 'invalid_json' | 'too_deep';

/**
 * `text` as a JsonText when it is exactly one JSON value (whitespace around it allowed) whose arrays and
 * objects nest at most `maxDepth` deep; else what is wrong with it. Same verdicts as JSON.parse
 * (test/json/json-text.test.ts compares them on generated and mutated texts).
 */
export function jsonText(text: string, maxDepth: number): JsonText | JsonTextProblem {
  const problem = checkJson(text, maxDepth);
  if (problem) return problem;
  return new CheckedJson(text);
}

/** The mark on the prototype: a defineProperty on each answer's object cost a property-map transition per call. */
class CheckedJson implements JsonText {
  declare readonly [MARK]: true;
  constructor(readonly text: string) {}
}
Object.defineProperty(CheckedJson.prototype, MARK, { value: true });

const OBJECT = 1;
const ARRAY = 2;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

function skipSpace(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** The index after the string opened at `i`, or -1. */
function stringEnd(text: string, i: number): number {
  const length = text.length;
  for (i++; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) return i + 1;
    if (c < 0x20) return -1;
    if (c === 0x5c /* \ */) {
      const escaped = text.charCodeAt(++i);
      if (escaped === 0x75 /* u */) {
        if (!(isHex(text.charCodeAt(i + 1)) && isHex(text.charCodeAt(i + 2)) && isHex(text.charCodeAt(i + 3)) && isHex(text.charCodeAt(i + 4)))) return -1;
        i += 4;
      } else if (!(
        escaped === 0x22 ||
        escaped === 0x5c ||
        escaped === 0x2f ||
        escaped === 0x62 ||
        escaped === 0x66 ||
        escaped === 0x6e ||
        escaped === 0x72 ||
        escaped === 0x74
      )) {
        return -1;
      }
    }
  }
  return -1;
}

function digitsEnd(text: string, i: number): number {
  while (isDigit(text.charCodeAt(i))) i++;
  return i;
}

/** The index after the number starting at `i`: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?, or -1. */
function numberEnd(text: string, i: number): number {
  if (text.charCodeAt(i) === 0x2d /* - */) i++;
  const first = text.charCodeAt(i);
  if (first === 0x30) i++;
  else if (first >= 0x31 && first <= 0x39) i = digitsEnd(text, i + 1);
  else return -1;
  if (text.charCodeAt(i) === 0x2e /* . */) {
    if (!isDigit(text.charCodeAt(i + 1))) return -1;
    i = digitsEnd(text, i + 1);
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) i++;
    if (!isDigit(text.charCodeAt(i))) return -1;
    i = digitsEnd(text, i);
  }
  return i;
}

function literalEnd(text: string, i: number, literal: string): number {
  return text.startsWith(literal, i) ? i + literal.length : -1;
}

/** A scalar value at `i` (string, number, true, false, null): the index after it, or -1. */
function scalarEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x22) return stringEnd(text, i);
  if (c === 0x74) return literalEnd(text, i, 'true');
  if (c === 0x66) return literalEnd(text, i, 'false');
  if (c === 0x6e) return literalEnd(text, i, 'null');
  return numberEnd(text, i);
}

/** `"key" :` at `i` (spaces around): the index of the value after it, or -1. */
function keyEnd(text: string, i: number): number {
  if (text.charCodeAt(i) !== 0x22) return -1;
  i = stringEnd(text, i);
  if (i < 0) return -1;
  i = skipSpace(text, i);
  return text.charCodeAt(i) === 0x3a /* : */ ? skipSpace(text, i + 1) : -1;
}

/**
 * The stack of open containers, one for every check: checkJson is synchronous, so no two checks share it at
 * once. A typed array made per call was the costliest single allocation of a proxied JSON call (~2k
 * instructions, docs/performance.md).
 */
let openStack = new Uint8Array(65);

/** Iterative (a stack of open containers, not recursion), so no depth of input can overflow it. */
function checkJson(text: string, maxDepth: number): JsonTextProblem | undefined {
  if (openStack.length < maxDepth + 1) openStack = new Uint8Array(maxDepth + 1);
  const open = openStack;
  let depth = 0;
  let i = skipSpace(text, 0);
  for (;;) {
    // A value starts at i.
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (depth === maxDepth) return 'too_deep';
      open[++depth] = c === 0x7b ? OBJECT : ARRAY;
      i = skipSpace(text, i + 1);
      const close = text.charCodeAt(i);
      if ((c === 0x7b && close === 0x7d) || (c === 0x5b && close === 0x5d)) {
        depth--;
        i++;
      } else {
        if (c === 0x7b && (i = keyEnd(text, i)) < 0) return 'invalid_json';
        continue;
      }
    } else if ((i = scalarEnd(text, i)) < 0) {
      return 'invalid_json';
    }
    // A value ended before i: close containers, or go on to the next element.
    for (;;) {
      i = skipSpace(text, i);
      if (depth === 0) return i === text.length ? undefined : 'invalid_json';
      const next = text.charCodeAt(i);
      if (next === 0x2c /* , */) {
        i = skipSpace(text, i + 1);
        if (open[depth] === OBJECT && (i = keyEnd(text, i)) < 0) return 'invalid_json';
        break;
      }
      if (next !== (open[depth] === OBJECT ? 0x7d : 0x5d)) return 'invalid_json';
      depth--;
      i++;
    }
  }
}

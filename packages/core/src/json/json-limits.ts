const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * Whether JSON text nests arrays and objects deeper than `maxDepth`. V8 parses any depth, but whatever walks
 * the result recursively afterwards (JSON.stringify of the envelope, a plugin) overflows the stack at some
 * ten thousand levels: refusing the text up front keeps that out of the gateway. A scan, not a parse:
 * brackets inside strings do not count, and invalid JSON is left for JSON.parse to refuse. Strings are
 * jumped over with indexOf (native), so text that is mostly strings costs little more than a memchr.
 */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  // Nesting deeper than maxDepth needs more than maxDepth opening characters.
  if (text.length <= maxDepth) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (char === OPEN_BRACKET || char === OPEN_BRACE) {
      if (++depth > maxDepth) return true;
    } else if (char === CLOSE_BRACKET || char === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that ends the string opened at `open`: the next one behind an even run of backslashes. */
function closingQuote(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

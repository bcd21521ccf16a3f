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
 * brackets inside strings do not count, and invalid JSON is left for JSON.parse to refuse.
 */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  // Nesting deeper than maxDepth needs more than maxDepth opening characters.
  if (text.length <= maxDepth) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === BACKSLASH) i++;
      else if (char === QUOTE) inString = false;
    } else if (char === QUOTE) {
      inString = true;
    } else if (char === OPEN_BRACKET || char === OPEN_BRACE) {
      if (++depth > maxDepth) return true;
    } else if (char === CLOSE_BRACKET || char === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/**
 * Where a JSON text first goes wrong, and how, in words that quote no more than one character of it.
 * JSON.parse's own messages give no position for most mistakes in Node 20 ("Unexpected token '}', "…" is
 * not valid JSON") and quote the text around it; this scanner follows RFC 8259 just far enough to point.
 */
export interface JsonSyntaxError {
  offset: number;
  message: string;
  hint?: string;
}

const TRAILING_COMMA = 'remove the comma before it: JSON allows no trailing comma';
const MISSING_COMMA = 'add a comma at the end of the line before';

export function findJsonError(text: string): JsonSyntaxError | undefined {
  let at = 0;
  const fail = (message: string, hint?: string): never => {
    throw { offset: at, message, ...(hint ? { hint } : {}) } satisfies JsonSyntaxError;
  };
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++;
  };
  const found = () => (at >= text.length ? 'the end of the file' : text[at] === '"' ? 'a string' : `"${printable(text[at]!)}"`);
  const expect = (char: string, what: string) => {
    space();
    if (text[at] !== char) fail(`expected ${what}, found ${found()}`);
    at++;
  };
  const string = () => {
    at++;
    while (at < text.length && text[at] !== '"') {
      if (text[at] === '\\') {
        at++;
        if (text[at] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(at + 1, at + 5))) fail('a \\u escape needs four hexadecimal digits');
          at += 4;
        } else if (!'"\\/bfnrt'.includes(text[at] ?? '')) fail('not a valid escape in a string');
      } else if (text.charCodeAt(at) < 0x20) fail('a line break or control character inside a string (close the string with ")');
      at++;
    }
    if (at >= text.length) fail('a string is not closed (a " is missing)');
    at++;
  };
  const value = (): void => {
    space();
    const char = text[at];
    if (char === '{') {
      at++;
      space();
      if (text[at] === '}') return void at++;
      for (;;) {
        space();
        if (text[at] !== '"') fail(`expected a key in double quotes, found ${found()}`, text[at] === '}' ? TRAILING_COMMA : undefined);
        string();
        expect(':', 'a ":" after the key');
        value();
        space();
        if (text[at] === ',') at++;
        else if (text[at] === '}') return void at++;
        else fail(`expected "," or "}" after a value, found ${found()}`, text[at] === '"' ? MISSING_COMMA : undefined);
      }
    }
    if (char === '[') {
      at++;
      space();
      if (text[at] === ']') return void at++;
      for (;;) {
        value();
        space();
        if (text[at] === ',') at++;
        else if (text[at] === ']') return void at++;
        else fail(`expected "," or "]" after a value, found ${found()}`, text[at] === '"' || text[at] === '{' ? MISSING_COMMA : undefined);
      }
    }
    if (char === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?)/.exec(text.slice(at, at + 400));
    if (!literal)
      fail(
        `expected a value, found ${found()}`,
        char === ']' || char === '}' ? TRAILING_COMMA : at >= text.length ? 'close every [ and { that is open' : undefined,
      );
    at += literal![0].length;
  };
  try {
    value();
    space();
    if (at < text.length) fail(`unexpected ${found()} after the end of the document`);
    return undefined;
  } catch (err) {
    if (typeof err === 'object' && err !== null && 'offset' in err) return err as JsonSyntaxError;
    if (err instanceof RangeError) return { offset: at, message: 'nested too deeply' };
    throw err;
  }
}

/** One character of the file, shown only when it is a plain visible one. */
const printable = (char: string): string => (/^[\x21-\x7e]$/.test(char) ? char : `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);

import YAML, { isAlias, isMap, isScalar, isSeq, LineCounter, type Document, type Node } from 'yaml';
import { findJsonError } from './json-syntax.js';

/** A line and column in a source file (a toolkit, the server configuration), both counted from 1. */
export interface Position {
  line: number;
  column: number;
}

/** A configuration or toolkit file's parsed document and where each of its keys and values stands in the text. */
export interface SourceFile {
  document: unknown;
  /** The position of the value at `path` (of its key with `key`), or of the nearest enclosing node that exists. */
  locate(path: ReadonlyArray<string | number>, key?: boolean): Position | undefined;
}

/** A file that does not parse: why, where, and the lines around it (a code frame). */
export interface SyntaxProblem {
  message: string;
  hint?: string;
  position: Position;
  frame: string;
}

/**
 * Parses a toolkit or configuration file (JSON or YAML). JSON is parsed by JSON.parse (the document), then read once more by the YAML parser,
 * of which JSON is a subset, for the positions of its keys.
 */
export function parseSourceFile(text: string, file: string): SourceFile | { syntax: SyntaxProblem } {
  if (file.endsWith('.json')) {
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      const error = findJsonError(text) ?? { offset: 0, message: 'not valid JSON' };
      const position = positionAt(text, error.offset);
      return {
        syntax: { message: `not valid JSON: ${error.message}`, ...(error.hint ? { hint: error.hint } : {}), position, frame: codeFrame(text, position) },
      };
    }
    // Positions are wanted only for a file with problems: the second reading waits until then.
    let locate: SourceFile['locate'] | undefined;
    return {
      document,
      locate: (at, key) => {
        if (!locate) {
          const lines = new LineCounter();
          const located = YAML.parseDocument(text, { lineCounter: lines, uniqueKeys: false });
          locate = located.errors.length > 0 ? () => undefined : locator(located, lines);
        }
        return locate(at, key);
      },
    };
  }
  const lines = new LineCounter();
  const parsed = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: true, lineCounter: lines });
  const error = parsed.errors[0];
  if (error) {
    const position = { line: error.linePos?.[0].line ?? 1, column: error.linePos?.[0].col ?? 1 };
    const summary = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    const hint = YAML_HINTS[error.code];
    return { syntax: { message: `not valid YAML: ${summary}`, ...(hint ? { hint } : {}), position, frame: codeFrame(text, position) } };
  }
  // Aliases are expanded with a cap, so a "billion laughs" file cannot exhaust memory.
  const document = parsed.toJS({ maxAliasCount: 100 }) as unknown;
  return { document, locate: locator(parsed, lines) };
}

const INDENTATION = 'check the indentation: the keys of one mapping start in one column, list items with "- "';
const YAML_HINTS: Partial<Record<string, string>> = {
  BAD_INDENT: INDENTATION,
  MISSING_CHAR: INDENTATION,
  UNEXPECTED_TOKEN: INDENTATION,
  TAB_AS_INDENT: 'indent with spaces, not tabs',
  DUPLICATE_KEY: 'a key appears twice in one mapping: keep one',
};

function locator(document: Document, lines: LineCounter): SourceFile['locate'] {
  const at = (node: Node | null | undefined) => {
    const offset = node?.range?.[0];
    if (offset === undefined) return undefined;
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
  return (path, key = false) => {
    let node = document.contents as Node | null;
    let found = at(node);
    for (const [index, segment] of path.entries()) {
      if (isAlias(node)) node = node.resolve(document) ?? null;
      let next: Node | null | undefined;
      if (isMap(node)) {
        const pair = node.items.find((item) => (isScalar(item.key) ? String(item.key.value) : String(item.key)) === String(segment));
        if (pair && key && index === path.length - 1) return at(pair.key as Node) ?? found;
        next = pair?.value as Node | null | undefined;
        if (pair && !next) return at(pair.key as Node) ?? found;
      } else if (isSeq(node) && /^\d+$/.test(String(segment))) next = node.items[Number(segment)] as Node | undefined;
      if (!next) return found;
      node = next;
      found = at(node) ?? found;
    }
    return found;
  };
}

export function positionAt(text: string, offset: number): Position {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/** The line of the problem with two before it and a caret under its column, numbered, as compilers print. */
export function codeFrame(text: string, position: Position): string {
  const all = text.split('\n');
  const first = Math.max(1, position.line - 2);
  const width = String(position.line).length;
  const shown = all.slice(first - 1, position.line).map((content, index) => {
    const number = String(first + index).padStart(width);
    return `${first + index === position.line ? '>' : ' '} ${number} | ${content.slice(0, 160)}`;
  });
  return [...shown, `  ${' '.repeat(width)} | ${' '.repeat(Math.max(0, position.column - 1))}^`].join('\n');
}

import YAML, { isMap, isScalar, isSeq, LineCounter, type Node } from 'yaml';

/** A line and column of a source's text, both from 1. */
export interface Position {
  line: number;
  column: number;
}

/** A source's document and where the value at a key path stands in its text (when the text is a file's). */
export interface InventoryText {
  document: unknown;
  /** Where the value at `path` stands (its key's place with `key`), or the nearest enclosing node that exists. */
  locate(path: ReadonlyArray<string | number>, key?: boolean): Position | undefined;
}

/** A source's text that does not parse, and where. */
export interface TextProblem {
  message: string;
  position?: Position;
}

/**
 * Parses an inventory source: JSON (a URL's or a command's answer, a `.json` file) by JSON.parse, anything else as
 * YAML (JSON is a subset of it); both located through the YAML parser, as core reads toolkit files
 * (config/source-file.ts), so that a problem is shown at its file:line:column. Aliases are expanded with a cap.
 */
export function parseInventoryText(text: string, json: boolean): InventoryText | { syntax: TextProblem } {
  let document: unknown;
  if (json) {
    try {
      document = JSON.parse(text);
    } catch (err) {
      return { syntax: { message: `not valid JSON: ${(err as Error).message.split('\n')[0]}` } };
    }
  }
  const lines = new LineCounter();
  const parsed = YAML.parseDocument(text, { lineCounter: lines, uniqueKeys: !json, prettyErrors: true });
  const error = parsed.errors[0];
  if (!json && error) {
    const position = error.linePos ? { line: error.linePos[0].line, column: error.linePos[0].col } : undefined;
    return {
      syntax: { message: `not valid YAML: ${error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`, ...(position ? { position } : {}) },
    };
  }
  if (!json) document = parsed.toJS({ maxAliasCount: 100 }) as unknown;
  const at = (node: Node | null | undefined): Position | undefined => {
    const offset = node?.range?.[0];
    if (offset === undefined) return undefined;
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
  return {
    document,
    locate(path, key = false) {
      if (parsed.errors.length > 0) return undefined;
      let node = parsed.contents as Node | null;
      let found = at(node);
      for (const [index, segment] of path.entries()) {
        let next: Node | null | undefined;
        if (isMap(node)) {
          const pair = node.items.find((item) => (isScalar(item.key) ? String(item.key.value) : String(item.key)) === String(segment));
          if (pair && key && index === path.length - 1) return at(pair.key as Node) ?? found;
          next = (pair?.value as Node | null | undefined) ?? (pair?.key as Node | undefined);
        } else if (isSeq(node) && typeof segment === 'number') next = node.items[segment] as Node | undefined;
        if (!next) return found;
        node = next;
        found = at(node) ?? found;
      }
      return found;
    },
  };
}

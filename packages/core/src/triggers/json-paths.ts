/** One step of a JSON path: a member name or an array index. */
export type JsonPath = ReadonlyArray<string | number>;

const STEP = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d{1,6})\]|\["((?:[^"\\]|\\.)*)"\])/;
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * `$.a.b`, `$.a[0].b` and `$["a b"]` as steps; undefined for anything else (filters, wildcards and recursive
 * descent are not needed to pick a field out of a provider's event, and are not taken).
 */
export function compileJsonPath(text: string): JsonPath | undefined {
  if (!text.startsWith('$')) return undefined;
  const steps: Array<string | number> = [];
  let rest = text.slice(1);
  while (rest.length > 0) {
    const match = STEP.exec(rest);
    if (!match) return undefined;
    const step = match[1] ?? (match[2] !== undefined ? Number(match[2]) : JSON.parse(`"${match[3]}"`));
    if (typeof step === 'string' && FORBIDDEN.has(step)) return undefined;
    steps.push(step);
    rest = rest.slice(match[0].length);
  }
  return steps.length > 0 ? steps : undefined;
}

/** The value at a path, or undefined where any step is missing (an own property only: never a prototype's). */
export function valueAt(root: unknown, path: JsonPath): unknown {
  let value = root;
  for (const step of path) {
    if (value === null || typeof value !== 'object') return undefined;
    if (typeof step === 'number' ? !Array.isArray(value) : Array.isArray(value)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(value, step)) return undefined;
    value = (value as Record<string | number, unknown>)[step];
  }
  return value;
}

import path from 'node:path';
import type { JsonSchema } from '../plugins/response-description.js';
import { nearest } from '../suggest.js';
import { formatPath, UNKNOWN_KEY, type Issue } from '../config/schema-issues.js';
import type { ToolkitProblem } from './config-issues.js';
import type { SourceFile } from '../config/source-file.js';

/**
 * Turns a file's issues into problems a person can act on without the docs: each at its line and column,
 * inside its endpoint (`GET items/search`), with the validator's words ("Invalid input: expected array,
 * received undefined") said plainly ("missing"), and a hint: the nearest valid key for a misspelt one, the
 * key's description for a missing one. `schema` is the toolkit JSON Schema (`tkgate schema`), which knows
 * every key of core and of each loaded endpoint type.
 */
export function diagnose(file: string, issues: readonly Issue[], source?: SourceFile, schema?: JsonSchema): ToolkitProblem[] {
  const document = source?.document;
  const problems: ToolkitProblem[] = [];
  const unknownPerParent = new Map<string, { shown: number; hidden: number }>();
  // A file without a list of endpoints may be any file (a symlink to a service's secrets): its values are not
  // quoted, and its unknown keys are named only when they are a near miss of a valid key.
  const toolkitLike = isRecord(document) && Array.isArray(document.endpoints);
  for (const issue of issues) {
    const at = issue.path;
    const worded = issue.message === UNKNOWN_KEY ? unknownKey(at, document, schema) : explain(issue, document, schema, toolkitLike);
    if (issue.message === UNKNOWN_KEY) {
      // A file that is not a toolkit (a symlink to any file) must not have its lines logged as keys.
      const parent = formatPath(at.slice(0, -1));
      const tally = unknownPerParent.get(parent) ?? { shown: 0, hidden: 0 };
      unknownPerParent.set(parent, tally);
      if (tally.shown >= MAX_UNKNOWN_KEYS || !(toolkitLike || worded.hint?.startsWith('did you mean'))) {
        tally.hidden++;
        continue;
      }
      tally.shown++;
    }
    const position = source?.locate(at, issue.at === 'key' || issue.message === UNKNOWN_KEY);
    const endpoint = endpointOf(at, document);
    problems.push({
      file: path.basename(file),
      path: at.map(shownSegment).join('.'),
      ...(position ? { line: position.line, column: position.column } : {}),
      ...(endpoint ? { endpoint } : {}),
      message: worded.message,
      ...(worded.hint ? { hint: worded.hint } : {}),
    });
  }
  for (const [parent, { shown, hidden }] of unknownPerParent) {
    if (hidden === 0) continue;
    const position = source?.locate(parent ? parent.split('.') : []);
    problems.push({
      file: path.basename(file),
      path: parent,
      ...(position ? { line: position.line, column: position.column } : {}),
      message: `${hidden} ${shown > 0 ? 'more ' : ''}unknown key${hidden === 1 ? '' : 's'}`,
      hint: 'is this a toolkit file?',
    });
  }
  return problems;
}

const MAX_UNKNOWN_KEYS = 8;

/** A key as shown in a path: letters, digits and _ . $ - @, at most 40 of them; anything else is a "?". */
function shownSegment(segment: string | number): string {
  const text = String(segment);
  const safe = text.slice(0, 40).replace(/[^\w.$@-]/g, '?');
  return text.length > 40 ? `${safe}…` : safe;
}

/** An endpoint path as written, its template marks kept (`hosts/{host}`, `files/*`), anything else unsafe shown as `/`. */
function shownPath(path: string): string {
  const safe = path.slice(0, 40).replace(/[^\w.$@{}*/-]/g, '/');
  return path.length > 40 ? `${safe}…` : safe;
}

/** `METHOD path` of the endpoint a path is inside, read from the document as written. */
function endpointOf(at: ReadonlyArray<string | number>, document: unknown): string | undefined {
  if (at[0] !== 'endpoints' || at.length < 2) return undefined;
  const endpoint = valueAt(document, at.slice(0, 2));
  if (!isRecord(endpoint)) return undefined;
  const methods = [endpoint.method].flat().filter((method): method is string => typeof method === 'string' && /^[A-Za-z]{1,10}$/.test(method));
  const where = typeof endpoint.path === 'string' ? shownPath(endpoint.path) : `endpoint ${Number(at[1]) + 1}`;
  return methods.length > 0 ? `${methods.join(',')} ${where}` : where;
}

function unknownKey(at: ReadonlyArray<string | number>, document: unknown, schema: JsonSchema | undefined): { message: string; hint?: string } {
  const parent = at.slice(0, -1);
  const known = [...new Set(schemasAt(schema, parent, document).flatMap((node) => Object.keys((node.properties ?? {}) as object)))];
  const present = valueAt(document, parent);
  const unused = known.filter((key) => !(isRecord(present) && key in present));
  const guess = nearest(String(at.at(-1)), unused);
  if (guess) return { message: UNKNOWN_KEY, hint: `did you mean ${guess}?` };
  return unused.length > 0 ? { message: UNKNOWN_KEY, hint: `valid keys here: ${known.join(', ')}` } : { message: UNKNOWN_KEY };
}

/** A validator's message in plain words: what was expected, and what was found instead. */
function explain(issue: Issue, document: unknown, schema: JsonSchema | undefined, quoteValues: boolean): { message: string; hint?: string } {
  const at = issue.path;
  const value = valueAt(document, at);
  const nodes = schemasAt(schema, at, document);
  const description = nodes.map((node) => node.description).find((text): text is string => typeof text === 'string');
  const expected = describeSchemas(nodes);
  const parent = valueAt(document, at.slice(0, -1));
  const generic = /^(Invalid|Too (small|big)|Expected)\b/.test(issue.message);
  if (generic && value === undefined && at.length > 0 && !(isRecord(parent) && String(at.at(-1)) in parent)) {
    return { message: 'missing', hint: description ?? (expected ? `expected ${expected}` : undefined) };
  }
  const found = `, not ${kindOf(value, quoteValues)}`;
  let match: RegExpExecArray | null;
  if ((match = /^Invalid input: expected (\w+), received \w+$/.exec(issue.message))) {
    return {
      message: `must be ${match[1] === 'int' ? 'a whole number' : expected || typeWords(match[1]!)}${match[1] === 'int' ? '' : found}`,
      hint: description,
    };
  }
  if ((match = /^Invalid (?:option|input): expected (?:one of )?(.+)$/.exec(issue.message))) {
    const options = match[1]!.split('|').map((option) => option.replace(/^"|"$/g, ''));
    const guess = typeof value === 'string' ? nearest(value, options) : undefined;
    return { message: `must be ${options.length > 1 ? 'one of ' : ''}${options.join(', ')}${found}`, hint: guess ? `did you mean ${guess}?` : description };
  }
  if (issue.message === 'Invalid input') {
    const options = nodes.flatMap((node) => (Array.isArray(node.enum) ? node.enum.map(String) : []));
    const guess = typeof value === 'string' ? nearest(value, options) : undefined;
    return { message: `must be ${expected || 'of another type or form'}${found}`, hint: guess ? `did you mean ${guess}?` : description };
  }
  if ((match = /^Too (small|big): expected (\w+) to (?:have|be) ([<>]=?)(\S+)(?: (\w+))?$/.exec(issue.message))) {
    const [, , , relation, limit, unit] = match as unknown as [string, string, string, string, string, string?];
    const bound = relation.startsWith('>') ? (relation === '>' ? 'more than' : 'at least') : relation === '<' ? 'less than' : 'at most';
    if (unit && bound === 'at least' && limit === '1') return { message: 'must not be empty', hint: description };
    return { message: unit ? `must have ${bound} ${limit} ${unit}` : `must be ${bound} ${limit}`, hint: description };
  }
  return { message: issue.message, ...(issue.hint ? { hint: issue.hint } : {}) };
}

const typeWords = (type: string): string =>
  ({ array: 'a list', object: 'a mapping (key: value)', string: 'a string', number: 'a number', integer: 'a whole number', boolean: 'true or false' })[type] ??
  type;

/** What a value is, in words, quoting no more than a short number or word of it (and nothing unless `quote`). */
function kindOf(value: unknown, quote: boolean): string {
  if (value === undefined) return 'empty';
  if (value === null) return 'null (an empty value)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return quote && /^[\w .-]{1,30}$/.test(value) ? `the string "${value}"` : 'a string';
  if (typeof value === 'number') return quote ? `the number ${value}` : 'a number';
  return quote ? String(value) : typeof value;
}

/** The first node that says what it expects: the others at a path are the alternatives it is made of. */
function describeSchemas(nodes: JsonSchema[]): string {
  return nodes.map(describeSchema).find((words) => words !== '') ?? '';
}

function describeSchema(node: JsonSchema): string {
  if (Array.isArray(node.enum)) return `one of ${node.enum.join(', ')}`;
  if (node.const !== undefined) return JSON.stringify(node.const);
  const alternatives = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
  if (alternatives && !node.type) return [...new Set(alternatives.map(describeSchema).filter((words) => words !== ''))].join(' or ');
  if (node.type === 'array') {
    const items = node.items && typeof node.items === 'object' ? describeSchema(node.items as JsonSchema) : '';
    return items ? `a list (each ${items})` : 'a list';
  }
  return typeof node.type === 'string' ? typeWords(node.type) : '';
}

/**
 * The schema nodes that apply at a path of the document: through properties, additionalProperties, items,
 * $ref, allOf/anyOf/oneOf, and the `then` of an `if` on a constant (an endpoint's `type:`) that the document meets.
 */
function schemasAt(root: JsonSchema | undefined, at: ReadonlyArray<string | number>, document: unknown): JsonSchema[] {
  if (!root) return [];
  let nodes = expand([root], root, document);
  for (const [index, segment] of at.entries()) {
    const value = valueAt(document, at.slice(0, index + 1));
    const next: JsonSchema[] = [];
    for (const node of nodes) {
      const properties = node.properties as Record<string, JsonSchema> | undefined;
      if (properties?.[String(segment)]) next.push(properties[String(segment)]!);
      else if (node.additionalProperties && typeof node.additionalProperties === 'object') next.push(node.additionalProperties as JsonSchema);
      if (/^\d+$/.test(String(segment)) && node.items && typeof node.items === 'object') next.push(node.items as JsonSchema);
    }
    nodes = expand(next, root, value);
    if (nodes.length === 0) break;
  }
  return nodes;
}

function expand(nodes: JsonSchema[], root: JsonSchema, value: unknown, depth = 0): JsonSchema[] {
  if (depth > 8) return nodes;
  return nodes.flatMap((node) => {
    const more: JsonSchema[] = [];
    if (typeof node.$ref === 'string' && node.$ref.startsWith('#/$defs/')) {
      const def = (root.$defs as Record<string, JsonSchema> | undefined)?.[node.$ref.slice('#/$defs/'.length)];
      if (def) more.push(def);
    }
    for (const key of ['allOf', 'anyOf', 'oneOf'] as const) if (Array.isArray(node[key])) more.push(...(node[key] as JsonSchema[]));
    if (node.if && node.then && meets(node.if as JsonSchema, value)) more.push(node.then as JsonSchema);
    return [node, ...expand(more, root, value, depth + 1)];
  });
}

function meets(condition: JsonSchema, value: unknown): boolean {
  const properties = condition.properties as Record<string, JsonSchema> | undefined;
  if (!properties || !isRecord(value)) return false;
  return Object.entries(properties).every(([key, rule]) => rule.const === undefined || value[key] === rule.const);
}

function valueAt(document: unknown, at: ReadonlyArray<string | number>): unknown {
  let value = document;
  for (const segment of at) {
    if (Array.isArray(value) && /^\d+$/.test(String(segment))) value = value[Number(segment)];
    else if (isRecord(value) && Object.hasOwn(value, String(segment))) value = value[String(segment)];
    else return undefined;
  }
  return value;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

import { parse as parseQueryString } from 'node:querystring';
import { invalidPayload } from '../errors.js';
import { jsonDepthExceeds } from '../json/json-limits.js';

/** Deepest nesting of arrays and objects a JSON body may have. */
export const MAX_JSON_DEPTH = 64;

/**
 * Names that would reach an object's prototype when copied by assignment (`payload[key] = value`), or
 * that plugins might take for the inherited ones: refused as field names anywhere in a payload.
 */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const prototypeKeyProblem = (path: string) =>
  invalidPayload([{ field: path, rule: 'field_name', message: `${path.split('.').pop()} is not allowed as a field name` }]);

/**
 * Query strings and forms: flat fields, a repeated key becomes an array. The object has no prototype
 * (node:querystring makes it so), and prototype key names are refused.
 */
export function parseTextFields(text: string): Record<string, unknown> {
  const fields = parseQueryString(text) as Record<string, unknown>;
  for (const key of PROTOTYPE_KEYS) if (Object.hasOwn(fields, key)) throw prototypeKeyProblem(key);
  return fields;
}

/**
 * A JSON body: refused past MAX_JSON_DEPTH before it is parsed, then refused when any object in it has a
 * prototype key. An empty body is {}.
 */
export function parseJsonText(text: string): unknown {
  if (text.length === 0) return Object.create(null) as Record<string, unknown>;
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
    throw invalidPayload([{ field: 'body', rule: 'max_depth', message: `the JSON body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` }]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidPayload([{ field: 'body', rule: 'syntax', message: 'the body is not valid JSON' }], 'the request body could not be read');
  }
  // Every such key is spelled in the text, or escaped with \u: most bodies skip the walk.
  if (MAY_HAVE_PROTOTYPE_KEY.test(text)) {
    const path = prototypeKeyPath(value, '');
    if (path !== undefined) throw prototypeKeyProblem(path);
  }
  return value;
}

const MAY_HAVE_PROTOTYPE_KEY = /proto|constructor|\\u/;

/** The dotted path of the first prototype key in a parsed JSON value (depth is bounded by then). */
function prototypeKeyPath(value: unknown, at: string): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
  for (const [key, child] of entries) {
    const path = at === '' ? String(key) : `${at}.${key}`;
    if (typeof key === 'string' && PROTOTYPE_KEYS.has(key)) return path;
    const found = prototypeKeyPath(child, path);
    if (found !== undefined) return found;
  }
  return undefined;
}

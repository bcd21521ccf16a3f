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
 * NUL (U+0000) in text input: PostgreSQL's text cannot hold it (the driver's error would be a 500), and no name,
 * comment or search needs it, so every text a caller sends is refused with it on every database alike: JSON and
 * form bodies here, the URL (path and query string) in refuseNulInUrl. Finding one costs an indexOf on the raw
 * text; only a text that may hold one is walked for the field to name.
 */
const NUL = '\u0000';

/** A field name as the details show it: a NUL in it spelled \u0000. */
const shown = (name: string): string => name.replaceAll(NUL, '\\u0000');

const nulProblem = (field: string) =>
  invalidPayload([{ field, rule: 'nul_character', message: `${field} holds a NUL character (U+0000), which no text may hold` }]);

/** The dotted path of the first string (or key) holding a NUL in a parsed value, or undefined. */
function nulPath(value: unknown, at: string): string | undefined {
  if (typeof value === 'string') return value.includes(NUL) ? at || 'body' : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
  for (const [key, child] of entries) {
    const path = at === '' ? shown(String(key)) : `${at}.${shown(String(key))}`;
    if (typeof key === 'string' && key.includes(NUL)) return path;
    const found = nulPath(child, path);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Query strings and forms: flat fields, a repeated key becomes an array. The object has no prototype
 * (node:querystring makes it so); prototype key names and NUL characters (also as %00) are refused.
 */
export function parseTextFields(text: string): Record<string, unknown> {
  const fields = parseQueryString(text) as Record<string, unknown>;
  for (const key of PROTOTYPE_KEYS) if (Object.hasOwn(fields, key)) throw prototypeKeyProblem(key);
  if (text.indexOf('%00') !== -1 || text.indexOf(NUL) !== -1) {
    for (const [key, value] of Object.entries(fields)) {
      if (key.includes(NUL) || (Array.isArray(value) ? value.some((each: string) => each.includes(NUL)) : String(value).includes(NUL))) {
        throw nulProblem(shown(key));
      }
    }
  }
  return fields;
}

/**
 * Every request's URL, checked by the router before any route reads it (runs?user=, a toolkit's query, a path
 * value): a NUL (%00; Node's parser refuses a raw one) in the path is refused naming `path`, one in the query
 * string naming its parameter.
 */
export function refuseNulInUrl(url: string): void {
  const at = url.indexOf('%00');
  if (at === -1) return;
  const query = url.indexOf('?');
  if (query === -1 || at < query) throw nulProblem('path');
  parseTextFields(url.slice(query + 1));
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
  // JSON spells a NUL only as \u0000 (a raw one is a syntax error).
  if (text.indexOf('\\u0000') !== -1) {
    const path = nulPath(value, '');
    if (path !== undefined) throw nulProblem(path);
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

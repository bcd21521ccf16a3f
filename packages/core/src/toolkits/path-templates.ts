import type { FieldProblem } from '../errors.js';

/**
 * Endpoint paths with `{name}` segments (one segment each) and a trailing `*` (the rest of the path, possibly
 * empty, any depth): `hosts/{host}/restart`, `files/*`. A path without either is exact and is found through
 * the toolkit's map; templates are tried only when no exact path takes the request (step 2).
 */
export interface PathTemplate {
  /** The segments before any `*`: a literal, or the name of a parameter. */
  segments: ReadonlyArray<string | { param: string }>;
  /** Ends with `*`. */
  wildcard: boolean;
  /** The parameters in order, `*` last for a wildcard. */
  params: readonly string[];
}

/** What step 2 found in the URL, as received (percent-encoded): each parameter's segment and a wildcard's remainder. */
export interface PathMatch {
  values: readonly string[];
  remainder: string;
}

/** A parameter's name: also the `<name>` of `$path.<name>`. */
export const PARAM_NAME = '[A-Za-z_][A-Za-z0-9_]*';
const PARAM_SEGMENT = new RegExp(`^\\{(${PARAM_NAME})\\}$`);
/** A parameter's value after percent-decoding. */
const PARAM_VALUE = /^[A-Za-z0-9._~-]+$/;

/** The template of an endpoint path, or undefined when the path is exact. */
export function parseTemplate(path: string): PathTemplate | undefined {
  if (!path.includes('{') && !path.endsWith('*')) return undefined;
  const parts = path.split('/');
  const wildcard = parts[parts.length - 1] === '*';
  if (wildcard) parts.pop();
  const segments = parts.map((part) => {
    const param = PARAM_SEGMENT.exec(part)?.[1];
    return param === undefined ? part : { param };
  });
  const params = segments.flatMap((segment) => (typeof segment === 'string' ? [] : [segment.param]));
  return { segments, wildcard, params: wildcard ? [...params, '*'] : params };
}

/** A parameter named twice in one path, if any. */
export function repeatedParam(template: PathTemplate): string | undefined {
  return template.params.find((param, index) => template.params.indexOf(param) !== index);
}

const compatible = (a: string | { param: string }, b: string | { param: string }) => typeof a !== 'string' || typeof b !== 'string' || a === b;

/**
 * Whether some path matches both (same kind: two templates, or two wildcards; an exact path beats a template and
 * a template beats a wildcard, so those pairs never compete).
 */
export function templatesOverlap(a: PathTemplate, b: PathTemplate): boolean {
  if (a.wildcard !== b.wildcard) return false;
  if (!a.wildcard && a.segments.length !== b.segments.length) return false;
  const common = Math.min(a.segments.length, b.segments.length);
  for (let i = 0; i < common; i++) if (!compatible(a.segments[i]!, b.segments[i]!)) return false;
  return true;
}

/** The parameter values and remainder of an endpoint path (split at `/`) that the template matches, else undefined. */
export function matchTemplate(template: PathTemplate, parts: readonly string[]): PathMatch | undefined {
  const { segments } = template;
  if (template.wildcard ? parts.length < segments.length : parts.length !== segments.length) return undefined;
  const values: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const part = parts[i]!;
    if (typeof segment === 'string') {
      if (segment !== part) return undefined;
    } else if (part === '') return undefined;
    else values.push(part);
  }
  return { values, remainder: template.wildcard ? parts.slice(segments.length).join('/') : '' };
}

/**
 * The segments of a remainder that would climb (`.`, `..`, also percent-encoded or behind an encoded slash), and
 * `..;x`, which Tomcat and Jetty read as `..` (a path parameter after the dots).
 */
const CLIMBS = /(^|[/\\])\.\.?(;[^/\\]*)?($|[/\\])/;
/** A `{name}` value that is a dot segment: an upstream that normalises its path would climb with it. */
const DOT_SEGMENT = /^\.\.?$/;

/**
 * The parameters' values, percent-decoded and checked: a `{name}` one segment of [A-Za-z0-9._~-], a remainder
 * without `.` or `..` segments (it must not climb above the upstream's base path) and validly encoded. Per call it
 * makes the params object and, only for a bad path, the problems. The params are a plain object, as the context's
 * other fields are (`Object.create(null)` starts in V8's dictionary mode); `__proto__`, a valid name, is defined
 * rather than assigned, which would set the prototype.
 */
export function decodePathParams(template: PathTemplate, match: PathMatch): { params: Record<string, string>; problems: FieldProblem[] } {
  const params: Record<string, string> = {};
  let problems: FieldProblem[] = NO_PROBLEMS;
  const names = template.params;
  for (let index = 0; index < names.length; index++) {
    const name = names[index]!;
    const raw = name === '*' ? match.remainder : match.values[index]!;
    const decoded = name === '*' ? decodeRemainder(raw) : decodeSegment(raw);
    const problem =
      decoded === undefined ? 'encoding' : name === '*' ? climbs(raw) : PARAM_VALUE.test(decoded) && !DOT_SEGMENT.test(decoded) ? undefined : 'segment';
    if (problem === undefined) setParam(params, name, decoded!);
    else (problems === NO_PROBLEMS ? (problems = []) : problems).push(pathProblem(name, problem));
  }
  return { params, problems };
}

const NO_PROBLEMS: FieldProblem[] = [];
Object.freeze(NO_PROBLEMS);

function setParam(params: Record<string, string>, name: string, value: string): void {
  if (name === '__proto__') Object.defineProperty(params, name, { value, enumerable: true, writable: true, configurable: true });
  else params[name] = value;
}

/** 'segment' when a remainder (as received) has a `.` or `..` segment, also percent-encoded or behind an encoded slash. */
function climbs(raw: string): 'segment' | undefined {
  return raw.split('/').some((segment) => CLIMBS.test(decodeSegment(segment) ?? '')) ? 'segment' : undefined;
}

function pathProblem(name: string, problem: 'encoding' | 'segment'): FieldProblem {
  const field = `path.${name}`;
  if (problem === 'encoding') return { field, rule: 'encoding', message: `${field} is not validly percent-encoded` };
  return name === '*'
    ? { field, rule: 'segment', message: `${field} may not hold . or .. segments (nor ..;)` }
    : { field, rule: 'segment', message: `${field} must be one segment of A-Z a-z 0-9 . _ ~ -, and not . or ..` };
}

function decodeSegment(raw: string): string | undefined {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function decodeRemainder(raw: string): string | undefined {
  const parts = raw.split('/').map(decodeSegment);
  return parts.includes(undefined) ? undefined : parts.join('/');
}

import { RE2JS } from 're2js';
import type { FieldProblem } from '../errors.js';
import type { Issue } from '../config/schema-issues.js';
import { longestMatch } from './pattern-bound.js';
import { compileChoicesFrom, type CompiledChoicesFrom } from '../parameters/index.js';
import { PARSEABLE_CONTENT_TYPES, type ClientFilterConfig, type FieldRuleConfig, type FieldType } from './toolkit-file-schema.js';

/**
 * client_filter, compiled once at load. Patterns run on RE2 semantics (re2js): matching is linear in
 * the input, but its cost per character grows with the compiled program (`[a-z]{1,1000}` is 2,000 steps).
 * So a pattern's program size times the longest value it may be run on is bounded: that longest value is
 * max_length or the longest value the pattern itself can match (pattern-bound.ts: `^[a-z]{1,20}$`, 20),
 * whichever is smaller, or UNBOUNDED_PATTERN_INPUT characters when neither bounds it (a longer value fails the
 * pattern unread), and a pattern whose bound exceeds PATTERN_BUDGET is refused at load.
 */
export const UNBOUNDED_PATTERN_INPUT = 65_536;
/** Program steps times characters: about 40-160 ms of one core on a loaded 2-core machine (re2js, Node 20). */
export const PATTERN_BUDGET = 2_000_000;

/** Compiles a field pattern (re2js); throws on a pattern that is not valid RE2. */
export type PatternCompiler = (source: string) => RE2JS;

/**
 * A compiler that compiles each distinct pattern once, for one reload pass or one `config check`: files
 * and endpoints repeat the same patterns, and each re2js compile is slow and keeps its program
 * (docs/performance.md, "3,000 files at once"). A compiled RE2JS is immutable (each match makes its own
 * matcher), so endpoints may share one. Made per pass, so it never outlives the patterns in use.
 */
export function patternCache(): PatternCompiler {
  const compiled = new Map<string, RE2JS>();
  return (source) => {
    let regex = compiled.get(source);
    if (!regex) {
      regex = RE2JS.compile(source);
      compiled.set(source, regex);
    }
    return regex;
  };
}

const compileEachTime: PatternCompiler = (source) => RE2JS.compile(source);

export interface CompiledFieldRule {
  type?: FieldType;
  maxLength?: number;
  /** The longest string the pattern is run on (code units); longer fails the rule. */
  pattern?: { source: string; regex: RE2JS; longest: number; /** A longer value cannot match the pattern at all. */ boundedBySelf: boolean };
  allowedValues?: Array<string | number | boolean | null>;
  /** `choices_from`: the value must be one of the choices its endpoint gives the caller (checked at step 4 after the rules). */
  choicesFrom?: CompiledChoicesFrom;
  /** `secret: true`: kept and shown nowhere (parameters/secret-fields.ts). */
  secret?: true;
}

export interface CompiledClientFilter {
  allowedFields?: ReadonlySet<string>;
  requiredFields: string[];
  maxBodyBytes?: number;
  allowedContentTypes: readonly string[];
  fieldRules: ReadonlyMap<string, CompiledFieldRule>;
  /** Rules per path parameter (`path_rules`), checked before the payload's. */
  pathRules: ReadonlyMap<string, CompiledFieldRule>;
  /** The fields with `choices_from`, in rule order; undefined when none (step 4 then asks nothing). */
  choiceFields?: ReadonlyArray<readonly [field: string, choicesFrom: CompiledChoicesFrom]>;
  /** The fields with `secret: true`; undefined when none. */
  secretFields?: ReadonlySet<string>;
}

export function compileClientFilter(
  config: ClientFilterConfig | undefined,
  issues: Issue[],
  at: Array<string | number>,
  compilePattern: PatternCompiler = compileEachTime,
): CompiledClientFilter {
  const filter = config ?? {};
  const allowed = filter.allowed_fields ? new Set(filter.allowed_fields) : undefined;
  for (const [index, field] of (filter.required_fields ?? []).entries()) {
    if (allowed && !allowed.has(field))
      issues.push({ path: [...at, 'required_fields', index], message: `${field} is required but not in allowed_fields, so it would always be stripped` });
  }
  const fieldRules = new Map<string, CompiledFieldRule>();
  let choiceFields: Array<readonly [string, CompiledChoicesFrom]> | undefined;
  let secretFields: Set<string> | undefined;
  for (const [field, rule] of Object.entries(filter.field_rules ?? {})) {
    const rulePath = [...at, 'field_rules', field];
    if (allowed && !allowed.has(field)) issues.push({ path: rulePath, message: `${field} has rules but is not in allowed_fields` });
    const compiled = compileRule(rule, issues, rulePath, compilePattern);
    if (rule.choices_from) {
      compiled.choicesFrom = compileChoicesFrom(field, rule.choices_from, allowed, issues, [...rulePath, 'choices_from']);
      (choiceFields ??= []).push([field, compiled.choicesFrom]);
    }
    if (rule.secret) {
      compiled.secret = true;
      (secretFields ??= new Set()).add(field);
    }
    fieldRules.set(field, compiled);
  }
  for (const [field, choicesFrom] of choiceFields ?? []) {
    for (const [name, arg] of choicesFrom.args)
      if ('field' in arg && secretFields?.has(arg.field))
        issues.push({
          path: [...at, 'field_rules', field, 'choices_from', 'args', name],
          message: `${arg.field} is a secret field: it is never sent for choices`,
        });
  }
  const pathRules = new Map<string, CompiledFieldRule>();
  for (const [param, rule] of Object.entries(filter.path_rules ?? {})) {
    pathRules.set(param, compileRule(rule, issues, [...at, 'path_rules', param], compilePattern));
  }
  return {
    allowedFields: allowed,
    requiredFields: filter.required_fields ?? [],
    maxBodyBytes: filter.max_body_bytes,
    allowedContentTypes: filter.allowed_content_types?.map((type) => type.toLowerCase()) ?? PARSEABLE_CONTENT_TYPES,
    fieldRules,
    pathRules,
    ...(choiceFields && { choiceFields }),
    ...(secretFields && { secretFields }),
  };
}

function compileRule(rule: FieldRuleConfig, issues: Issue[], at: Array<string | number>, compilePattern: PatternCompiler): CompiledFieldRule {
  const compiled: CompiledFieldRule = { type: rule.type, maxLength: rule.max_length, allowedValues: rule.allowed_values };
  if (rule.max_length !== undefined && rule.type && !['string', 'array'].includes(rule.type)) {
    issues.push({ path: [...at, 'max_length'], message: `max_length applies to strings and arrays, not ${rule.type}` });
  }
  if (rule.pattern !== undefined) {
    if (rule.type && rule.type !== 'string') issues.push({ path: [...at, 'pattern'], message: `pattern applies to strings, not ${rule.type}` });
    try {
      const regex = compilePattern(rule.pattern);
      // max_length and the pattern's own bound count code points, the matcher UTF-16 units: at most two per code point.
      // A pattern that holds the whole value and repeats nothing without end (^[a-z]{1,20}$) bounds it itself.
      const bound = longestMatch(regex);
      const characters = Math.min(rule.max_length ?? Infinity, bound ?? Infinity);
      const longest = Number.isFinite(characters) ? characters * 2 : UNBOUNDED_PATTERN_INPUT;
      const steps = programSize(regex);
      if (steps * longest > PATTERN_BUDGET) {
        const fits = Math.floor(PATTERN_BUDGET / steps / 2);
        issues.push({
          path: [...at, 'pattern'],
          message: `compiles to ${steps} steps, too many to match values of up to ${Number.isFinite(characters) ? characters : UNBOUNDED_PATTERN_INPUT} characters without holding up the server`,
          hint:
            fits >= 1
              ? `set max_length to at most ${fits}, or simplify the pattern (a counted repetition like {1,1000} is one step per count)`
              : 'simplify the pattern',
        });
      }
      compiled.pattern = { source: rule.pattern, regex, longest, boundedBySelf: bound !== undefined && bound * 2 === longest };
    } catch (err) {
      issues.push({ path: [...at, 'pattern'], message: `not a valid (RE2) regular expression: ${(err as Error).message}` });
    }
  }
  return compiled;
}

/** The number of instructions of the compiled program (re2js keeps it on the RE2 object it wraps). */
function programSize(regex: RE2JS): number {
  const program = (regex as unknown as { re2Input?: { prog?: { inst?: unknown[] } } }).re2Input?.prog?.inst;
  // Should a later re2js hide it, the pattern's length is a rough stand-in (each character is a step or more).
  return Array.isArray(program) ? program.length : regex.pattern().length;
}

/** Where the payload came from: query-string and form values are strings and may be coerced. */
export type PayloadSource = 'json' | 'text-fields';

/**
 * Applies the filter to a parsed payload: strips fields not allowed, checks required fields and rules.
 * Returns the filtered payload (with coerced values) and every problem found.
 */
export function applyClientFilter(
  filter: CompiledClientFilter,
  input: Record<string, unknown>,
  source: PayloadSource,
): { payload: Record<string, unknown>; problems: FieldProblem[] } {
  // No prototype: a field named like an inherited property (toString) is absent unless the client sent it.
  const payload = Object.create(null) as Record<string, unknown>;
  for (const [field, value] of Object.entries(input)) {
    if (!filter.allowedFields || filter.allowedFields.has(field)) payload[field] = value;
  }
  const problems: FieldProblem[] = [];
  for (const field of filter.requiredFields) {
    if (payload[field] === undefined) problems.push({ field, rule: 'required', message: `${field} is required` });
  }
  for (const [field, rule] of filter.fieldRules) {
    if (payload[field] === undefined) continue;
    const checked = checkValue(field, payload[field], rule, source);
    if ('problem' in checked) problems.push(checked.problem);
    else payload[field] = checked.value;
  }
  return { payload, problems };
}

/**
 * path_rules on the decoded path parameters: the values a rule of type integer, number or boolean converts are
 * kept converted, and each failure names `path.<name>`.
 */
export function applyPathRules(filter: CompiledClientFilter, params: Record<string, unknown>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const [name, rule] of filter.pathRules) {
    if (params[name] === undefined) continue;
    const checked = checkValue(`path.${name}`, params[name], rule, 'text-fields');
    if ('problem' in checked) problems.push(checked.problem);
    else params[name] = checked.value;
  }
  return problems;
}

function checkValue(field: string, raw: unknown, rule: CompiledFieldRule, source: PayloadSource): { value: unknown } | { problem: FieldProblem } {
  const fail = (ruleName: string, message: string) => ({ problem: { field, rule: ruleName, message: `${field} ${message}` } });
  const value = rule.type && source === 'text-fields' ? coerce(raw, rule.type) : raw;
  if (rule.type && !hasType(value, rule.type)) return fail('type', `must be ${article(rule.type)}`);
  if (rule.maxLength !== undefined) {
    const max = rule.maxLength;
    // Characters are code points; a string has no more of them than UTF-16 units, so only a string longer in units
    // is counted (the spread makes an array of its code points).
    const tooLong = typeof value === 'string' ? value.length > max && [...value].length > max : Array.isArray(value) && value.length > max;
    if (tooLong) return fail('max_length', `must be at most ${max} long`);
  }
  if (rule.pattern) {
    if (typeof value !== 'string') return fail('pattern', 'must be a string matching the pattern');
    if (value.length > rule.pattern.longest)
      return rule.pattern.boundedBySelf
        ? fail('pattern', `must match ${rule.pattern.source}`)
        : fail('pattern', `is too long to be matched against its pattern (at most ${UNBOUNDED_PATTERN_INPUT} characters)`);
    if (!rule.pattern.regex.matcher(value).find()) return fail('pattern', `must match ${rule.pattern.source}`);
  }
  if (rule.allowedValues && !rule.allowedValues.some((allowed) => allowed === value)) {
    return fail('allowed_values', `must be one of ${rule.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  return { value };
}

function coerce(value: unknown, type: FieldType): unknown {
  if (typeof value !== 'string') return value;
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value.trim())) return Number(value);
  if (type === 'boolean' && ['true', 'false', '1', '0'].includes(value)) return value === 'true' || value === '1';
  return value;
}

function hasType(value: unknown, type: FieldType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isSafeInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
  }
}

const article = (type: FieldType) => (type === 'integer' || type === 'object' || type === 'array' ? `an ${type}` : `a ${type}`);

import { RE2JS } from 're2js';
import type { FieldProblem } from '../errors.js';
import type { ConfigIssue } from '../plugins/plugin-api.js';
import { PARSEABLE_CONTENT_TYPES, type ClientFilterConfig, type FieldRuleConfig, type FieldType } from './toolkit-file-schema.js';

/**
 * client_filter, compiled once at load. Patterns run on RE2 semantics (re2js): matching is linear in
 * the input, so no pattern/input pair can stall the event loop.
 */
export interface CompiledFieldRule {
  type?: FieldType;
  maxLength?: number;
  pattern?: { source: string; regex: RE2JS };
  allowedValues?: Array<string | number | boolean | null>;
}

export interface CompiledClientFilter {
  allowedFields?: ReadonlySet<string>;
  requiredFields: string[];
  maxBodyBytes?: number;
  allowedContentTypes: readonly string[];
  fieldRules: ReadonlyMap<string, CompiledFieldRule>;
}

export function compileClientFilter(config: ClientFilterConfig | undefined, issues: ConfigIssue[], at: Array<string | number>): CompiledClientFilter {
  const filter = config ?? {};
  const allowed = filter.allowed_fields ? new Set(filter.allowed_fields) : undefined;
  for (const [index, field] of (filter.required_fields ?? []).entries()) {
    if (allowed && !allowed.has(field))
      issues.push({ path: [...at, 'required_fields', index], message: `${field} is required but not in allowed_fields, so it would always be stripped` });
  }
  const fieldRules = new Map<string, CompiledFieldRule>();
  for (const [field, rule] of Object.entries(filter.field_rules ?? {})) {
    const rulePath = [...at, 'field_rules', field];
    if (allowed && !allowed.has(field)) issues.push({ path: rulePath, message: `${field} has rules but is not in allowed_fields` });
    fieldRules.set(field, compileRule(rule, issues, rulePath));
  }
  return {
    allowedFields: allowed,
    requiredFields: filter.required_fields ?? [],
    maxBodyBytes: filter.max_body_bytes,
    allowedContentTypes: filter.allowed_content_types ?? PARSEABLE_CONTENT_TYPES,
    fieldRules,
  };
}

function compileRule(rule: FieldRuleConfig, issues: ConfigIssue[], at: Array<string | number>): CompiledFieldRule {
  const compiled: CompiledFieldRule = { type: rule.type, maxLength: rule.max_length, allowedValues: rule.allowed_values };
  if (rule.max_length !== undefined && rule.type && !['string', 'array'].includes(rule.type)) {
    issues.push({ path: [...at, 'max_length'], message: `max_length applies to strings and arrays, not ${rule.type}` });
  }
  if (rule.pattern !== undefined) {
    if (rule.type && rule.type !== 'string') issues.push({ path: [...at, 'pattern'], message: `pattern applies to strings, not ${rule.type}` });
    try {
      compiled.pattern = { source: rule.pattern, regex: RE2JS.compile(rule.pattern) };
    } catch (err) {
      issues.push({ path: [...at, 'pattern'], message: `not a valid (RE2) regular expression: ${(err as Error).message}` });
    }
  }
  return compiled;
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

function checkValue(field: string, raw: unknown, rule: CompiledFieldRule, source: PayloadSource): { value: unknown } | { problem: FieldProblem } {
  const fail = (ruleName: string, message: string) => ({ problem: { field, rule: ruleName, message: `${field} ${message}` } });
  const value = rule.type && source === 'text-fields' ? coerce(raw, rule.type) : raw;
  if (rule.type && !hasType(value, rule.type)) return fail('type', `must be ${article(rule.type)}`);
  if (rule.maxLength !== undefined) {
    const length = typeof value === 'string' ? [...value].length : Array.isArray(value) ? value.length : undefined;
    if (length !== undefined && length > rule.maxLength) return fail('max_length', `must be at most ${rule.maxLength} long`);
  }
  if (rule.pattern) {
    if (typeof value !== 'string') return fail('pattern', 'must be a string matching the pattern');
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

import { invalidPayload, type FieldProblem } from '../errors.js';

/** Small, explicit checks for the auth endpoints' bodies; every problem names its field and rule. */
export interface StringField {
  kind: 'string';
  maxLength: number;
}
export interface IntegerField {
  kind: 'integer';
}
export type FieldSpec = StringField | IntegerField;

export function checkFields(body: Record<string, unknown>, spec: Record<string, FieldSpec>, required: string[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const field of required) {
    if (body[field] === undefined || body[field] === null) problems.push({ field, rule: 'required', message: `${field} is required` });
  }
  for (const [field, rule] of Object.entries(spec)) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (rule.kind === 'string') {
      if (typeof value !== 'string' || value.length === 0) {
        problems.push({ field, rule: 'type', message: `${field} must be a non-empty string` });
      } else if (value.length > rule.maxLength) {
        problems.push({ field, rule: 'max_length', message: `${field} must be at most ${rule.maxLength} characters` });
      }
    } else if (!Number.isSafeInteger(value) || (value as number) < 1) {
      problems.push({ field, rule: 'type', message: `${field} must be a positive integer` });
    }
  }
  return problems;
}

export function requireFields(body: Record<string, unknown>, spec: Record<string, FieldSpec>, required: string[]): void {
  const problems = checkFields(body, spec, required);
  if (problems.length > 0) throw invalidPayload(problems);
}

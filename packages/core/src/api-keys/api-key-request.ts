import { parseDuration } from '../config/duration.js';
import { invalidPayload, type FieldProblem } from '../errors.js';
import { TOOLKIT_NAME } from '../admin/names.js';

/** What a new key is asked for with (HTTP body or CLI flags), before it is checked. */
export interface ApiKeyAsked {
  name: unknown;
  toolkits?: unknown;
  expires_in?: unknown;
}

/** A checked request for a key: a name, a scope ([] = every toolkit) and a lifetime (none = no expiry). */
export interface ApiKeyRequest {
  name: string;
  scope: string[];
  expiresInMs: number | undefined;
}

export const MAX_NAME_LENGTH = 64;
export const MAX_SCOPE_TOOLKITS = 100;
/** Ten years: far enough for any machine identity, near enough that every expiry is a valid date. */
export const MAX_EXPIRES_IN_MS = 3650 * 86_400_000;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function nameProblems(name: unknown): FieldProblem[] {
  if (name === undefined || name === null) return [{ field: 'name', rule: 'required', message: 'name is required' }];
  if (typeof name !== 'string' || name.trim() === '') return [{ field: 'name', rule: 'type', message: 'name must be a non-empty string' }];
  if (name.length > MAX_NAME_LENGTH) return [{ field: 'name', rule: 'max_length', message: `name must be at most ${MAX_NAME_LENGTH} characters` }];
  if (CONTROL.test(name)) return [{ field: 'name', rule: 'pattern', message: 'name may not hold control characters' }];
  return [];
}

function scopeProblems(toolkits: unknown): FieldProblem[] {
  if (toolkits === undefined || toolkits === null) return [];
  if (!Array.isArray(toolkits)) return [{ field: 'toolkits', rule: 'type', message: 'toolkits must be an array of toolkit names' }];
  if (toolkits.length > MAX_SCOPE_TOOLKITS)
    return [{ field: 'toolkits', rule: 'max_items', message: `toolkits may name at most ${MAX_SCOPE_TOOLKITS} toolkits` }];
  return toolkits.flatMap((toolkit, i) =>
    typeof toolkit === 'string' && TOOLKIT_NAME.test(toolkit)
      ? []
      : [{ field: `toolkits.${i}`, rule: 'pattern', message: `toolkits.${i} must be a toolkit name: 1-64 of lowercase letters, digits, _ and -` }],
  );
}

function expiryProblems(expiresIn: unknown): FieldProblem[] {
  if (expiresIn === undefined || expiresIn === null) return [];
  let ms: number;
  try {
    ms = parseDuration(expiresIn);
  } catch (err) {
    return [{ field: 'expires_in', rule: 'type', message: `expires_in ${(err as Error).message}` }];
  }
  if (ms <= 0) return [{ field: 'expires_in', rule: 'min', message: 'expires_in must be longer than 0' }];
  if (ms > MAX_EXPIRES_IN_MS) return [{ field: 'expires_in', rule: 'max', message: 'expires_in must be at most 3650d' }];
  return [];
}

/** Checks what a key is asked for; every problem names its field (`name`, `toolkits.N`, `expires_in`). 400 invalid_payload otherwise. */
export function checkApiKeyRequest(asked: ApiKeyAsked): ApiKeyRequest {
  const problems = [...nameProblems(asked.name), ...scopeProblems(asked.toolkits), ...expiryProblems(asked.expires_in)];
  if (problems.length > 0) throw invalidPayload(problems, problems.map((problem) => problem.message).join('; '));
  const scope = [...new Set((asked.toolkits as string[] | undefined | null) ?? [])].sort();
  const expiresIn = asked.expires_in;
  return { name: asked.name as string, scope, expiresInMs: expiresIn === undefined || expiresIn === null ? undefined : parseDuration(expiresIn) };
}

import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { z } from 'zod';
import type { ConfigIssue } from '../plugins/plugin-api.js';

/**
 * A problem in one toolkit file, worded once and shown the same way by `config check` (text or JSON), the
 * live reload's log line and a refused start: the file, where in it (line and column from 1, when the text
 * could be read), the key path (e.g. endpoints.0.client_filter.field_rules.q.pattern), the endpoint as
 * `METHOD path` when the problem is inside one, what is wrong and, when it helps, how to fix it.
 */
export interface ToolkitProblem {
  file: string;
  path: string;
  message: string;
  line?: number;
  column?: number;
  endpoint?: string;
  hint?: string;
  /** The lines around a syntax error, for a person at a terminal; never logged (it quotes the file). */
  frame?: string;
}

/** A ConfigIssue as core produces it: a hint, and whether the key itself (not its value) is what is wrong. */
export interface Issue extends ConfigIssue {
  hint?: string;
  at?: 'key';
}

export const UNKNOWN_KEY = 'unknown key';

export const formatPath = (path: ReadonlyArray<string | number>): string => path.join('.');

/** One line: `file:line:column: path (METHOD path): message; hint`. */
export function describeProblem(problem: ToolkitProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}:${problem.column}`;
  const endpoint = problem.endpoint ? ` (${problem.endpoint})` : '';
  return `${where}: ${problem.path || '(file)'}${endpoint}: ${problem.message}${problem.hint ? `; ${problem.hint}` : ''}`;
}

/** The structured fields of a problem, for a log line or `config check --format json`. */
export function problemFields(problem: ToolkitProblem): Record<string, string | number | null> {
  return {
    file: problem.file,
    line: problem.line ?? null,
    column: problem.column ?? null,
    path: problem.path,
    endpoint: problem.endpoint ?? null,
    message: problem.message,
    hint: problem.hint ?? null,
  };
}

/** zod issues as Issues; an unknown key becomes its own path, so the path names it. */
export function fromZod(error: z.ZodError, prefix: Array<string | number> = []): Issue[] {
  return error.issues.flatMap((issue) => {
    const path = [...prefix, ...(issue.path as Array<string | number>)];
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: [...path, key], message: UNKNOWN_KEY, at: 'key' as const }));
    return [{ path, message: issue.message }];
  });
}

/** Runs any Standard Schema (zod, valibot, arktype ...) and returns its value or its issues. */
export async function validateStandard<T>(
  schema: StandardSchemaV1<unknown, T>,
  value: unknown,
  prefix: Array<string | number>,
): Promise<{ value: T } | { issues: Issue[] }> {
  const result = await schema['~standard'].validate(value);
  if (!result.issues) return { value: result.value };
  return {
    issues: result.issues.flatMap((issue) => {
      const path = [...prefix, ...(issue.path ?? []).map((segment) => String(typeof segment === 'object' ? segment.key : segment))];
      // zod reports unknown keys at their parent; name each key in the path, as for core keys.
      const unknownKeys = (issue as { code?: string; keys?: string[] }).code === 'unrecognized_keys' ? (issue as { keys?: string[] }).keys : undefined;
      return unknownKeys?.length
        ? unknownKeys.map((key) => ({ path: [...path, key], message: UNKNOWN_KEY, at: 'key' as const }))
        : [{ path, message: issue.message, ...(issue.message === UNKNOWN_KEY ? { at: 'key' as const } : {}) }];
    }),
  };
}

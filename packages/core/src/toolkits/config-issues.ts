import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { z } from 'zod';
import type { ConfigIssue } from '../plugins/plugin-api.js';

/** A problem in one toolkit file: the file, the key path (e.g. endpoints.0.client_filter.field_rules.q.pattern) and why. */
export interface ToolkitProblem {
  file: string;
  path: string;
  message: string;
}

export const formatPath = (path: ReadonlyArray<string | number>): string => path.join('.');

export const describeProblem = (problem: ToolkitProblem): string => `${problem.file}: ${problem.path || '(file)'}: ${problem.message}`;

/** zod issues as ConfigIssues; an unknown key becomes its own path, so the path names it. */
export function fromZod(error: z.ZodError, prefix: Array<string | number> = []): ConfigIssue[] {
  return error.issues.flatMap((issue) => {
    const path = [...prefix, ...(issue.path as Array<string | number>)];
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: [...path, key], message: 'unknown key' }));
    if (issue.code === 'invalid_union' && issue.path.length > 0) return [{ path, message: 'has the wrong type or value' }];
    return [{ path, message: issue.message }];
  });
}

/** Runs any Standard Schema (zod, valibot, arktype ...) and returns its value or its issues. */
export async function validateStandard<T>(
  schema: StandardSchemaV1<unknown, T>,
  value: unknown,
  prefix: Array<string | number>,
): Promise<{ value: T } | { issues: ConfigIssue[] }> {
  const result = await schema['~standard'].validate(value);
  if (!result.issues) return { value: result.value };
  return {
    issues: result.issues.flatMap((issue) => {
      const path = [...prefix, ...(issue.path ?? []).map((segment) => String(typeof segment === 'object' ? segment.key : segment))];
      // zod reports unknown keys at their parent; name each key in the path, as for core keys.
      const unknownKeys = (issue as { code?: string; keys?: string[] }).code === 'unrecognized_keys' ? (issue as { keys?: string[] }).keys : undefined;
      return unknownKeys?.length ? unknownKeys.map((key) => ({ path: [...path, key], message: 'unknown key' })) : [{ path, message: issue.message }];
    }),
  };
}

import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { z } from 'zod';

/**
 * What a schema found wrong in a value, at a key path: the ConfigIssue of the plugin API (plugins/plugin-api.ts),
 * as core produces it, with a hint, and whether the key itself (not its value) is what is wrong. Used by the
 * toolkit compiler and the plugin loader alike, so it sits in config/, below both.
 */
export interface Issue {
  path: Array<string | number>;
  message: string;
  hint?: string;
  at?: 'key';
}

export const UNKNOWN_KEY = 'unknown key';

export const formatPath = (path: ReadonlyArray<string | number>): string => path.join('.');

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

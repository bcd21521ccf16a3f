/**
 * The kinds of server setting. A setting is declared once (server-config.ts) with its default, its
 * environment variable, how a value is checked, how an environment string is read, and the value the
 * gateway uses; convict's schema, the ServerConfig type and the normalised values are all derived from it.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { z } from 'zod';
import { parseDuration } from './duration.js';

export interface Setting<T, Suffix extends string = ''> {
  readonly doc: string;
  /** As it would be written in a file. */
  readonly default: unknown;
  readonly env?: string | undefined;
  /** Never echoed in an error message (a database URL holds a password). */
  readonly sensitive?: boolean;
  /** Appended to the key in the normalised configuration: durations are milliseconds (`idle_timeout_ms`). */
  readonly suffix: Suffix;
  /** Throws with the reason when a value (from a file, a flag or the environment) is not acceptable. */
  check(value: unknown): void;
  /** An environment variable's text as the value a file would hold; throws with the reason. */
  fromEnv(text: string): unknown;
  /** The value the gateway uses; relative paths are resolved against `cwd`. */
  normalise(value: unknown, cwd: string): T;
  /** An object convict must take whole from a source (it would otherwise expect a schema for its keys). */
  readonly wholeObject?: boolean;
  /** What a value may be, for docs/configuration.md, when the refusals of `check` do not say it in words. */
  readonly accepts?: string;
}

/** Documentation and environment variable of one setting. */
export interface About {
  doc: string;
  env?: string;
  sensitive?: boolean;
}

type Kind<T> = Pick<Setting<T>, 'check' | 'normalise'> & Partial<Pick<Setting<T>, 'fromEnv'>>;

function setting<T>(value: unknown, about: About, kind: Kind<T>): Setting<T> {
  return { default: value, suffix: '', fromEnv: (text) => text, ...about, ...kind };
}

/** A problem with a part of a setting's value: `at` names the key inside it. */
export class SettingProblem extends Error {
  constructor(
    message: string,
    readonly at: string,
  ) {
    super(message);
  }
}

function fail(message: string): never {
  throw new Error(message);
}

const wholeNumber = (text: string) => (/^-?\d+$/.test(text.trim()) ? Number(text) : text);

export function text(value: string, about: About, check: (value: string) => void = () => undefined): Setting<string> {
  return setting(value, about, {
    check: (v) => (typeof v === 'string' ? check(v) : fail('must be a string')),
    normalise: (v) => v as string,
  });
}

/** A file or directory: relative to the working directory. */
export function filePath(value: string, about: About): Setting<string> {
  return setting(value, about, {
    check: (v) => (typeof v === 'string' && v !== '' ? undefined : fail('must be a path')),
    normalise: (v, cwd) => path.resolve(cwd, v as string),
  });
}

/** A file that may be left unset (""): relative to the working directory; unset stays "". */
export function optionalFile(about: About): Setting<string> {
  return setting('', about, {
    check: (v) => (typeof v === 'string' ? undefined : fail('must be a path, or "" for none')),
    normalise: (v, cwd) => (v === '' ? '' : path.resolve(cwd, v as string)),
  });
}

export function oneOf<const T extends string>(choices: readonly T[], value: T, about: About): Setting<T> {
  return setting(value, about, {
    check: (v) => (choices.includes(v as T) ? undefined : fail(`must be one of ${choices.join(', ')}`)),
    normalise: (v) => v as T,
  });
}

export function integer(value: number, about: About, range: { min?: number; max?: number } = {}): Setting<number> {
  const { min = -Number.MAX_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = range;
  return setting(value, about, {
    check: (v) => (Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max ? undefined : fail(describeRange(min, max))),
    fromEnv: wholeNumber,
    normalise: (v) => v as number,
  });
}

function describeRange(min: number, max: number): string {
  if (max !== Number.MAX_SAFE_INTEGER) return `must be a whole number from ${min} to ${max}`;
  return min === -Number.MAX_SAFE_INTEGER ? 'must be a whole number' : `must be a whole number of at least ${min}`;
}

export const port = (value: number, about: About) => integer(value, about, { min: 0, max: 65535 });

/** A fraction from 0 to 1 (a probability); from the environment a decimal number such as `0.25`. */
export function fraction(value: number, about: About): Setting<number> {
  return setting(value, about, {
    check: (v) => (typeof v === 'number' && v >= 0 && v <= 1 ? undefined : fail('must be a number from 0 to 1')),
    fromEnv: (t) => (/^\s*(0|1|0?\.\d+|1\.0*)\s*$/.test(t) ? Number(t) : fail('must be a number from 0 to 1')),
    normalise: (v) => v as number,
  });
}

/** true or false; from the environment true, false, 1 or 0 in any case, and nothing else. */
export function flag(value: boolean, about: About): Setting<boolean> {
  return setting(value, about, {
    check: (v) => (typeof v === 'boolean' ? undefined : fail('must be true or false')),
    fromEnv: (t) => {
      const word = t.trim().toLowerCase();
      if (word === 'true' || word === '1') return true;
      if (word === 'false' || word === '0') return false;
      return fail('must be true, false, 1 or 0');
    },
    normalise: (v) => v as boolean,
  });
}

/** "500ms", "45s", "30m", "2h", "90d" or a number of seconds; used in milliseconds under `<key>_ms`. */
export function duration(value: string, about: About, limit: { minMs?: number; maxMs?: number } = {}): Setting<number, '_ms'> {
  const check = (v: unknown) => {
    const ms = parseDuration(v);
    if (limit.minMs !== undefined && ms < limit.minMs) fail(`must be at least ${limit.minMs / 1000}s`);
    if (limit.maxMs !== undefined && ms > limit.maxMs) fail(`must be at most ${limit.maxMs / 1000}s`);
  };
  return { ...setting(value, about, { check, fromEnv: (t) => (/^\d+(\.\d+)?$/.test(t.trim()) ? Number(t) : t), normalise: parseDuration }), suffix: '_ms' };
}

/**
 * A list from the environment: a JSON array (`["a","b"]`, `[]`), or entries separated by commas (`a, b`).
 * Entries are trimmed; an empty entry is left for the setting's check to refuse.
 */
function listFromEnv(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('[')) return trimmed.split(',').map((entry) => entry.trim());
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return fail('must be a JSON array, or entries separated by commas');
  }
}

export function stringList(value: string[], about: About, describe = 'must be a list of strings'): Setting<string[]> {
  return setting(value, about, {
    check: (v) => (Array.isArray(v) && v.every((entry) => typeof entry === 'string' && entry !== '') ? undefined : fail(describe)),
    fromEnv: listFromEnv,
    normalise: (v) => [...(v as string[])],
  });
}

/** Browser origins (`scheme://host[:port]`, no path), or `["*"]` alone. */
export function originList(about: About): Setting<string[]> {
  const check = (value: unknown) => {
    if (!Array.isArray(value)) fail('must be a list of origins like "https://tools.example.org", or ["*"]');
    for (const origin of value) {
      if (origin === '*') {
        if (value.length > 1) fail('"*" must be the only entry');
        continue;
      }
      if (typeof origin !== 'string' || !URL.canParse(origin) || new URL(origin).origin !== origin) {
        fail(`${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path or trailing slash)`);
      }
    }
  };
  return setting([], about, { check, fromEnv: listFromEnv, normalise: (v) => [...(v as string[])] });
}

/** A positive number of processes, or "auto" for one per available core. */
export function processCount(value: number, about: About): Setting<number> {
  return setting(value, about, {
    check: (v) => (v === 'auto' || (Number.isSafeInteger(v) && (v as number) >= 1) ? undefined : fail('must be a whole number of at least 1, or "auto"')),
    fromEnv: wholeNumber,
    normalise: (v) => (v === 'auto' ? availableParallelism() : (v as number)),
  });
}

/** Objects of settings by name, each checked by its owner (plugin options). */
export function objectsByName(about: About): Setting<Record<string, Record<string, unknown>>> {
  const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  return {
    ...setting({}, about, {
      check: (v) => {
        if (!isObject(v)) fail('must be an object');
        for (const [name, entry] of Object.entries(v as object))
          if (!isObject(entry)) throw new SettingProblem(`must be an object of that plugin's settings`, name);
      },
      normalise: (v) => v as Record<string, Record<string, unknown>>,
    }),
    wholeObject: true,
  };
}

/** A structured value checked by a zod schema (the OIDC providers); a problem names the key inside it. `accepts` says in words what it takes. */
export function structured<T>(value: unknown, about: About, schema: z.ZodType<T>, accepts: string): Setting<T> {
  return {
    accepts,
    ...setting(value, about, {
      check: (v) => {
        const parsed = schema.safeParse(v);
        if (parsed.success) return;
        const [issue] = parsed.error.issues;
        if (issue!.path.length === 0) fail(issue!.message);
        throw new SettingProblem(issue!.message, issue!.path.map(String).join('.'));
      },
      normalise: (v) => schema.parse(v),
    }),
    wholeObject: true,
  };
}

import { z } from 'zod';

/**
 * `{ secret: "<scheme>:<reference>" }` in a toolkit file: a value the file names but does not hold
 * (`env:NAME`, `file:PATH`, or a scheme a plugin registered). Plugins accept it where a credential goes
 * (`secretOr(z.string())`) and read its value per call with `api.secrets.value(reference)`.
 */
export interface SecretReference {
  readonly secret: string;
}

/** `scheme:rest`: the scheme as URI schemes are spelt, then anything non-empty. */
export const SECRET_REFERENCE = /^([a-z][a-z0-9+.-]*):(.+)$/s;

export const secretReference = z
  .strictObject({
    secret: z
      .string()
      .regex(SECRET_REFERENCE, 'must be "<scheme>:<reference>", e.g. "env:API_KEY" or "file:api-key.txt"')
      .describe('"env:NAME" (the gateway\'s environment), "file:PATH" (relative to the toolkit file), or a scheme a plugin adds.'),
  })
  .describe('A secret kept outside the toolkit file: { secret: "env:NAME" } or { secret: "file:PATH" } (relative to the toolkit file).');

/** A value written in the file, or a reference to a secret kept elsewhere. */
export const secretOr = <T extends z.ZodType>(literal: T) => z.union([literal, secretReference]);

export function isSecretReference(value: unknown): value is SecretReference {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === 'secret' && typeof (value as { secret: unknown }).secret === 'string';
}

/** The scheme and the rest of a reference's text, or undefined when it has no scheme. */
export function splitReference(text: string): { scheme: string; rest: string } | undefined {
  const match = SECRET_REFERENCE.exec(text);
  return match ? { scheme: match[1]!, rest: match[2]! } : undefined;
}

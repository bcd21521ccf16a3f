import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Where a reference is written: its file names are relative to the toolkit file. */
export interface SecretPlace {
  /** The toolkit file's absolute path. */
  toolkitFile: string;
}

/** One opened reference: its current value, asked for by every call that uses it (keep it cheap: cache inside). */
export interface SecretSource {
  read(): string;
}

/**
 * A kind of secret reference (`env:`, `file:`, or a plugin's `vault:`): opens the part after `<name>:`
 * when a toolkit file is loaded. Throwing refuses the toolkit; the message names the reference, never a value.
 */
export interface SecretScheme {
  /** As written before the colon: [a-z][a-z0-9+.-]*. */
  name: string;
  open(reference: string, place: SecretPlace): SecretSource | Promise<SecretSource>;
}

/** A refused reference: why, in words that hold no value. */
export class SecretUnavailable extends Error {
  override name = 'SecretUnavailable';
}

/**
 * `env:NAME`: the gateway's environment as it was when the gateway started. Never the gateway's own settings
 * (TKGATE_*: the database URL, OIDC client secrets): a toolkit file's author must not be able to send them away.
 */
export function envScheme(environment: Readonly<Record<string, string | undefined>>): SecretScheme {
  return {
    name: 'env',
    open(name) {
      if (name.toUpperCase().startsWith('TKGATE_'))
        throw new SecretUnavailable(`${name} is one of the gateway's own settings, which toolkit files cannot reference`);
      const value = environment[name];
      if (value === undefined) throw new SecretUnavailable(`the environment variable ${name} is not set`);
      return { read: () => value };
    },
  };
}

/** A changed file is read again by the first call after this long: "within 1 s" with a stat at most twice a second. */
export const FILE_RECHECK_MS = 500;

/** The value of a secret file: its text with one trailing newline (LF or CRLF) dropped, as editors and `echo` add it. */
const fileValue = (file: string): string => readFileSync(file, 'utf8').replace(/\r?\n$/, '');

/**
 * `file:PATH` (relative to the toolkit file): read at load, then re-read when its size or modification time
 * changed, looked at no more than every FILE_RECHECK_MS. A file that becomes unreadable keeps its last value
 * until the toolkit is loaded again (which then refuses it).
 */
export const fileScheme: SecretScheme = {
  name: 'file',
  open(reference, place) {
    const file = path.resolve(path.dirname(place.toolkitFile), reference);
    let value: string;
    let stamp: string;
    try {
      stamp = stampOf(file);
      value = fileValue(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new SecretUnavailable(`the file ${reference} cannot be read${code ? ` (${code})` : ''}`);
    }
    let checkedAt = Date.now();
    return {
      read() {
        const now = Date.now();
        if (now - checkedAt < FILE_RECHECK_MS) return value;
        checkedAt = now;
        try {
          const current = stampOf(file);
          if (current !== stamp) {
            value = fileValue(file);
            stamp = current;
          }
        } catch {
          // Unreadable for a moment (an editor's rename, a Kubernetes symlink swap): the last value serves.
        }
        return value;
      },
    };
  },
};

function stampOf(file: string): string {
  const stat = statSync(file);
  return `${stat.size}:${stat.mtimeMs}:${stat.ino}`;
}

import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './paths.js';

/** Writes executable /bin/sh scripts into a fresh directory: `script(name, body)` returns the script's path. */
export function scriptWriter(prefix: string): (name: string, body: string) => string {
  const bin = tempDir(prefix);
  return (name, body) => {
    const file = path.join(bin, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };
}

/** A killed process whose parent died waits as a zombie until init reaps it: dead all the same. */
export const alive = (pid: number): boolean => {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.charAt(0);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
};

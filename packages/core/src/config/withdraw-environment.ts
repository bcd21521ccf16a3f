/**
 * Once `tkgate start` has read its configuration, the environment variables it read (TKGATE_DB_URL with its
 * password among them) leave the process: any process of the same user could otherwise read them in
 * /proc/<pid>/environ, an exec endpoint's command among them.
 */
import { closeSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { configEnvironmentNames } from './server-config.js';

export interface Withdrawn {
  /** The variables taken out, for the workers of server.workers, which read the configuration again. */
  values: Record<string, string>;
  /** Whether /proc/self/environ no longer shows them either (Linux, /proc/self/mem writable). */
  hidden: boolean;
}

export function withdrawConfigEnvironment(env: NodeJS.ProcessEnv = process.env): Withdrawn {
  const values: Record<string, string> = {};
  for (const name of configEnvironmentNames()) {
    const value = env[name];
    if (value === undefined) continue;
    values[name] = value;
    delete env[name];
  }
  const names = Object.keys(values);
  return { values, hidden: names.length === 0 || (env === process.env && blankStartEnvironment(names)) };
}

/**
 * /proc/self/environ shows the block the process started with (its stack), whatever unsetenv did to
 * `environ`: the withdrawn entries are overwritten there with NUL bytes, through /proc/self/mem. unsetenv
 * has already removed every pointer to them, so nothing reads those bytes any more.
 */
function blankStartEnvironment(names: string[]): boolean {
  let fd: number | undefined;
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1');
    // Fields 50 and 51 (env_start, env_end), counted after the command name, which may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[47]);
    const end = Number(fields[48]);
    if (!(start > 0 && end > start)) return false;
    fd = openSync('/proc/self/mem', 'r+');
    const block = Buffer.alloc(end - start);
    readSync(fd, block, 0, block.length, start);
    for (let at = 0; at < block.length;) {
      const next = block.indexOf(0, at);
      const entryEnd = next < 0 ? block.length : next;
      const entry = block.toString('latin1', at, entryEnd);
      if (names.some((name) => entry.startsWith(`${name}=`))) {
        block.fill(0, at, entryEnd);
        writeSync(fd, block, at, entryEnd - at, start + at);
      }
      at = entryEnd + 1;
    }
    const shown = readFileSync('/proc/self/environ', 'latin1').split('\0');
    return !shown.some((entry) => names.some((name) => entry.startsWith(`${name}=`)));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

import { mkdtemp, open, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '@tkgate/core';

const PREFIX = 'tkgate-ssh-';

/**
 * A run's private directory (mode 0700, under the work directory): the key or the run's key pair and
 * certificate, each node's ssh_config and known_hosts, ssh's logs. Files are 0600 and written exclusively;
 * `remove()` deletes all of it when the run ends. Its name carries the gateway's pid, so that a gateway that was
 * killed mid-run has its directories removed at the next start (`removeStaleRunDirectories`).
 */
export class RunDirectory {
  private constructor(readonly path: string) {}

  static async create(workDirectory: string): Promise<RunDirectory> {
    return new RunDirectory(await mkdtemp(path.join(workDirectory, `${PREFIX}${process.pid}-`)));
  }

  file(name: string): string {
    return path.join(this.path, name);
  }

  /** Writes a new file readable by the gateway's user alone (never over an existing one). */
  async write(name: string, content: string | Buffer): Promise<string> {
    const file = this.file(name);
    const handle = await open(file, 'wx', 0o600);
    try {
      await handle.writeFile(content);
    } finally {
      await handle.close();
    }
    return file;
  }

  async removeFiles(names: readonly string[]): Promise<void> {
    await Promise.all(names.map((name) => rm(this.file(name), { force: true })));
  }

  async remove(): Promise<void> {
    await rm(this.path, { recursive: true, force: true });
  }
}

/**
 * Removes run directories left by gateways that are gone (killed before their runs could clean up): a
 * directory whose pid is no live process. Another gateway's live runs on the same host are left alone.
 */
export async function removeStaleRunDirectories(workDirectory: string, log: Logger): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(workDirectory);
  } catch {
    return;
  }
  for (const entry of entries) {
    const pid = Number(/^tkgate-ssh-(\d+)-/.exec(entry)?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    await rm(path.join(workDirectory, entry), { recursive: true, force: true });
    log.info('fleet run directory of a stopped gateway removed', { directory: entry });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The work directory's path goes into ssh_config and a ProxyCommand: it must need no quoting there (no
 * whitespace, quotes, backslash or `%`). Answers why not, or undefined when it is fine.
 */
export function workDirectoryProblem(workDirectory: string): string | undefined {
  if (!path.isAbsolute(workDirectory)) return 'must be an absolute path';
  if (/[\s"'\\%`$]/.test(workDirectory)) return 'must not hold whitespace, quotes, a backslash, % or $ (it is written into ssh_config)';
  return undefined;
}

import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';

export const TOOLKIT_EXTENSIONS = ['.yaml', '.yml', '.json'];

/** One look at the toolkit directory: which files are there and a stat signature of each, no content read. */
export interface DirectoryListing {
  /** The directory's real path at this look (symlinks resolved), or undefined when it is missing. */
  realDir: string | undefined;
  /** Why the directory could not be listed, when it could not. */
  missing?: string;
  /** Toolkit files by path (under the directory as configured) with their signature: a change of content changes it. */
  files: ReadonlyMap<string, string>;
  /** Directories holding the targets of symlinked files, other than the directory itself: watched too. */
  targetDirs: ReadonlySet<string>;
}

export const isToolkitFileName = (name: string): boolean => !name.startsWith('.') && TOOLKIT_EXTENSIONS.includes(path.extname(name));

/**
 * Lists the directory, resolving its real path anew each time: a directory deleted and re-created, moved
 * and replaced, or a symlink re-pointed (`ln -sfn releases/r2 current`) is simply what this look sees.
 */
export async function listDirectory(dir: string): Promise<DirectoryListing> {
  let realDir: string;
  let entries;
  try {
    realDir = await realpath(dir);
    entries = await readdir(realDir, { withFileTypes: true });
  } catch (err) {
    return { realDir: undefined, missing: describeFsError(err), files: new Map(), targetDirs: new Set() };
  }
  const files = new Map<string, string>();
  const targetDirs = new Set<string>();
  const candidates = entries.filter((entry) => (entry.isFile() || entry.isSymbolicLink()) && isToolkitFileName(entry.name));
  await Promise.all(
    candidates.map(async (entry) => {
      const file = path.join(realDir, entry.name);
      const signature = await signatureOf(file);
      if (signature === 'directory') return;
      files.set(path.join(dir, entry.name), signature);
      if (entry.isSymbolicLink()) {
        const target = await realpath(file).catch(() => undefined);
        if (target && path.dirname(target) !== realDir) targetDirs.add(path.dirname(target));
      }
    }),
  );
  return { realDir, files: new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), targetDirs };
}

/** Identity, size and times of the file (of a symlink's target): equal signatures mean the content was not touched. */
async function signatureOf(file: string): Promise<string> {
  try {
    const s = await stat(file, { bigint: true });
    if (s.isDirectory()) return 'directory';
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (err) {
    return `unreadable:${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
}

export function describeFsError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'does not exist';
  if (code === 'ENOTDIR') return 'is not a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'cannot be read (permission denied)';
  return (err as Error).message;
}

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../db/connect.js';
import type { Logger } from '../log.js';
import type { EndpointTypes } from '../plugins/endpoint-types.js';
import { compileToolkitFile, TOOLKIT_EXTENSIONS } from './compile-toolkit.js';
import type { CompiledToolkit } from './compiled-toolkit.js';
import type { ToolkitProblem } from './config-issues.js';
import { readDatabaseSchema } from './database-schema.js';

/** The live toolkits by name. Replaced whole on every reload, never changed in place. */
export type ToolkitSnapshot = ReadonlyMap<string, CompiledToolkit>;

export interface ReloadOutcome {
  snapshot: ToolkitSnapshot;
  problems: ToolkitProblem[];
}

/**
 * Holds the current snapshot. A reload rescans the whole directory: every file is compiled again, a
 * broken file keeps its last good version, and a name claimed by two files stays with its earlier owner.
 * Rescanning everything (dozens of small files) makes renames, rename-saves and `git pull` of many
 * files at once end in the same state as a fresh start would.
 */
export class ToolkitRegistry {
  private current: ToolkitSnapshot = new Map();
  private lastGood = new Map<string, CompiledToolkit>();
  private reloading: Promise<ReloadOutcome> | undefined;
  private reloadAgain = false;

  constructor(
    private readonly dir: string,
    private readonly db: Database,
    private readonly types: EndpointTypes,
    private readonly log: Logger,
    /** Told the outcome of every reload (metrics). */
    private readonly onReload: (outcome: ReloadOutcome) => void = () => undefined,
  ) {}

  get snapshot(): ToolkitSnapshot {
    return this.current;
  }

  /** Compiles every file; reloads asked for while one runs are folded into one more run. */
  reload(): Promise<ReloadOutcome> {
    if (this.reloading) {
      this.reloadAgain = true;
      return this.reloading;
    }
    this.reloading = this.rescan().finally(() => {
      this.reloading = undefined;
      if (this.reloadAgain) {
        this.reloadAgain = false;
        void this.reload();
      }
    });
    return this.reloading;
  }

  private async rescan(): Promise<ReloadOutcome> {
    const schema = await readDatabaseSchema(this.db);
    const files = await listToolkitFiles(this.dir);
    const problems: ToolkitProblem[] = [];
    const candidates = new Map<string, CompiledToolkit>();
    for (const file of files) {
      const result = await compileToolkitFile(file, { schema, types: this.types });
      if ('toolkit' in result) {
        candidates.set(file, result.toolkit);
        continue;
      }
      problems.push(...result.problems);
      const kept = this.lastGood.get(file);
      if (kept) candidates.set(file, kept);
    }
    const owners = this.assignNames(candidates, problems);
    const next = new Map<string, CompiledToolkit>();
    for (const [name, file] of owners) next.set(name, candidates.get(file)!);
    this.logChanges(this.current, next, problems);
    this.current = next;
    this.lastGood = new Map([...owners.values()].map((file) => [file, candidates.get(file)!]));
    this.onReload({ snapshot: next, problems });
    return { snapshot: next, problems };
  }

  /** Which file owns each toolkit name: the file that owned it before, else the first by file name. */
  private assignNames(candidates: Map<string, CompiledToolkit>, problems: ToolkitProblem[]): Map<string, string> {
    const owners = new Map<string, string>();
    const previousOwner = (name: string) => this.current.get(name)?.file;
    const ordered = [...candidates.keys()].sort((a, b) => {
      const aOwns = previousOwner(candidates.get(a)!.name) === a ? 0 : 1;
      const bOwns = previousOwner(candidates.get(b)!.name) === b ? 0 : 1;
      return aOwns - bOwns || a.localeCompare(b);
    });
    for (const file of ordered) {
      const { name } = candidates.get(file)!;
      const owner = owners.get(name);
      if (owner) {
        problems.push({ file: path.basename(file), path: 'name', message: `toolkit ${name} is already defined in ${path.basename(owner)}` });
      } else {
        owners.set(name, file);
      }
    }
    return owners;
  }

  private logChanges(before: ToolkitSnapshot, after: ToolkitSnapshot, problems: ToolkitProblem[]): void {
    for (const problem of problems) this.log.error('toolkit file refused', { file: problem.file, path: problem.path, reason: problem.message });
    for (const [name, toolkit] of after) {
      const old = before.get(name);
      if (!old) this.log.info('toolkit loaded', { toolkit: name, file: path.basename(toolkit.file) });
      else if (old !== toolkit) this.log.info('toolkit reloaded', { toolkit: name, file: path.basename(toolkit.file) });
    }
    for (const name of before.keys()) if (!after.has(name)) this.log.info('toolkit removed', { toolkit: name });
  }
}

export async function listToolkitFiles(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return entries
    .filter((entry) => (entry.isFile() || entry.isSymbolicLink()) && !entry.name.startsWith('.') && TOOLKIT_EXTENSIONS.includes(path.extname(entry.name)))
    .map((entry) => path.join(dir, entry.name))
    .sort();
}

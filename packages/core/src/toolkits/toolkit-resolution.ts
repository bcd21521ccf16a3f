import path from 'node:path';
import type { CompileResult } from './compile-toolkit.js';
import type { CompiledToolkit } from './compiled-toolkit.js';
import type { ToolkitProblem } from './config-issues.js';

/** The live toolkits by name. Replaced whole on every reload, never changed in place. */
export type ToolkitSnapshot = ReadonlyMap<string, CompiledToolkit>;

/** A toolkit kept at its last good version although no file defines it validly right now, and why. */
export interface HeldToolkit {
  toolkit: string;
  reason: string;
  files: string[];
}

export interface Resolution {
  next: Map<string, CompiledToolkit>;
  /** Every problem of the directory as it is now: refused files and names defined more than once. */
  problems: ToolkitProblem[];
  held: HeldToolkit[];
  /** Toolkits held by refused files whose name cannot be read (full paths), for the next reload's LiveState. */
  heldByUnnamed: Map<string, string[]>;
  /** Names defined validly by several files, with those files (warned about at every reload). */
  duplicates: Array<{ toolkit: string; files: string[]; kept: string | undefined }>;
}

const stem = (file: string) => path.basename(file, path.extname(file));
const names = (files: string[]) => files.map((file) => path.basename(file));

/**
 * Which toolkit each name serves, from the compile results of every file now in the directory. One rule,
 * the same at boot, on hot reload and in `config check`, and it never depends on history:
 * - a name defined validly by one file is that file's toolkit;
 * - a name defined by several files is served by the file named after it (`kit.yaml` for `kit`) when
 *   exactly one is, and every other of those files is refused; when none is, all of them are refused;
 * - a live toolkit that no file defines validly keeps its last good version while a refused file claims
 *   its name (or names nothing readable), while a duplicate stands, or while the directory is missing;
 *   only when no file may define it any more is it removed.
 */
/** What the live state adds to the files: which changed in this batch, and which refused files hold which toolkits. */
export interface LiveState {
  snapshot: ToolkitSnapshot;
  /** Files added or changed since the live snapshot was built. */
  fresh: ReadonlySet<string>;
  /** Files gone since the live snapshot was built. */
  gone: ReadonlySet<string>;
  /** Toolkits held by refused files whose name cannot be read, at the last reload. */
  heldByUnnamed: ReadonlyMap<string, readonly string[]>;
  missingDirectory?: string | undefined;
}

export function resolveToolkits(results: ReadonlyMap<string, CompileResult>, state: LiveState): Resolution {
  const live = state.snapshot;
  const problems: ToolkitProblem[] = [];
  const definers = new Map<string, string[]>();
  const claimants = new Map<string, string[]>();
  const unnamed: string[] = [];
  for (const [file, result] of results) {
    if ('toolkit' in result) push(definers, result.toolkit.name, file);
    else {
      problems.push(...result.problems);
      if (result.name) push(claimants, result.name, file);
      else unnamed.push(file);
    }
  }
  const next = new Map<string, CompiledToolkit>();
  const duplicates: Resolution['duplicates'] = [];
  const contested = new Map<string, string[]>();
  for (const [name, files] of definers) {
    if (files.length === 1) {
      next.set(name, (results.get(files[0]!) as { toolkit: CompiledToolkit }).toolkit);
      continue;
    }
    const named = files.filter((file) => stem(file) === name);
    const winner = named.length === 1 ? named[0] : undefined;
    for (const file of files) {
      if (file === winner) continue;
      const message = winner
        ? `toolkit ${name} is also defined in ${path.basename(winner)}, the file named after it; this copy is refused`
        : `toolkit ${name} is defined in ${names(files).join(' and ')}: a name defined in several files is refused in each`;
      const nameAt = (results.get(file) as { toolkit: CompiledToolkit }).toolkit.nameAt;
      problems.push({ file: path.basename(file), ...(nameAt && { line: nameAt.line, column: nameAt.column }), path: 'name', message });
    }
    duplicates.push({ toolkit: name, files: names(files), kept: winner && path.basename(winner) });
    if (winner) next.set(name, (results.get(winner) as { toolkit: CompiledToolkit }).toolkit);
    else contested.set(name, files);
  }
  const held: HeldToolkit[] = [];
  const heldByUnnamed = new Map<string, string[]>();
  for (const [name, toolkit] of live) {
    if (next.has(name)) continue;
    const suspects = unnamedSuspects(name, toolkit.file, unnamed, state);
    if (suspects.length > 0) heldByUnnamed.set(name, suspects);
    const reason = holdReason(name, { contested, claimants, unnamed: suspects, missingDirectory: state.missingDirectory });
    if (!reason) continue;
    next.set(name, toolkit);
    held.push({ toolkit: name, ...reason });
  }
  return { next, problems, held, duplicates, heldByUnnamed };
}

/**
 * Refused files whose name cannot be read that may be this toolkit's new file: those added or changed in the
 * same batch in which its own file changed or went away, and those that held it before and did not change.
 * An unrelated file that has been broken all along never keeps a deleted toolkit alive.
 */
function unnamedSuspects(name: string, file: string, unnamed: string[], state: LiveState): string[] {
  const lostNow = state.gone.has(file) || state.fresh.has(file);
  const before = state.heldByUnnamed.get(name) ?? [];
  return unnamed.filter((candidate) => (lostNow && state.fresh.has(candidate)) || (before.includes(candidate) && !state.fresh.has(candidate)));
}

function holdReason(
  name: string,
  why: { contested: Map<string, string[]>; claimants: Map<string, string[]>; unnamed: string[]; missingDirectory: string | undefined },
): { reason: string; files: string[] } | undefined {
  if (why.missingDirectory) return { reason: `toolkits.dir ${why.missingDirectory}`, files: [] };
  const contested = why.contested.get(name);
  if (contested) return { reason: 'its name is defined in several files', files: names(contested) };
  const claimants = why.claimants.get(name);
  if (claimants) return { reason: 'the file that defines it is refused', files: names(claimants) };
  if (why.unnamed.length > 0) return { reason: 'a refused file whose name cannot be read may define it', files: names(why.unnamed) };
  return undefined;
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

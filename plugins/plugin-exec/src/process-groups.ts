import { existsSync, readdirSync, readFileSync } from 'node:fs';

/** SIGKILLs a whole process group (a command and everything it started); a group already gone is fine. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

interface ProcessStat {
  pid: number;
  ppid: number;
  pgrp: number;
  /** Not a zombie (killed, not yet reaped). */
  running: boolean;
}

/** Every process in /proc (undefined without /proc). */
function processes(): ProcessStat[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const found: ProcessStat[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so read after the last ')'.
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    found.push({ pid: Number(entry), ppid: Number(ppid), pgrp: Number(pgrp), running: state !== 'Z' && state !== 'X' });
  }
  return found;
}

/**
 * Whether the process runs: not gone, and not a zombie (killed, not yet reaped: a helper re-parented to init
 * stays one until init reaps it). Without /proc, what kill(2) says.
 */
export function processRunning(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/stat')) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  const state = stat.charAt(stat.lastIndexOf(')') + 2);
  return state !== 'Z' && state !== 'X';
}

/** Whether any process of the group is still running: zombies (killed, not yet reaped by init) are dead. */
function groupRunning(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  const all = processes();
  return all === undefined || all.some((entry) => entry.pgrp === pgid && entry.running); // No /proc: trust kill(2).
}

/** The running descendants of `pid` (children, their children ...). */
function descendants(pid: number): number[] {
  const all = processes() ?? [];
  const found: number[] = [];
  let parents = new Set([pid]);
  while (parents.size > 0) {
    const children = all.filter((entry) => parents.has(entry.ppid));
    found.push(...children.filter((entry) => entry.running).map((entry) => entry.pid));
    parents = new Set(children.map((entry) => entry.pid));
  }
  return found;
}

const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name);
  } catch {
    // Gone already.
  }
};

/**
 * Ends a spawn helper that stopped answering, and everything under it: the helper is frozen first (SIGSTOP)
 * so it starts nothing more, its descendants (its commands and, as it is their subreaper, what they left)
 * are SIGKILLed until none runs (or `deadlineMs` passed), then the helper itself.
 */
export async function killTree(pid: number, deadlineMs = 5000): Promise<void> {
  const until = Date.now() + deadlineMs;
  signal(pid, 'SIGSTOP');
  for (let left = descendants(pid); left.length > 0 && Date.now() < until; left = descendants(pid)) {
    for (const child of left) signal(child, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  signal(pid, 'SIGKILL');
}

/** The pids of the running processes whose environment holds exactly `entry` ("NAME=value"); none without /proc. */
function processesMarked(entry: string): number[] {
  const needle = Buffer.from(`\0${entry}\0`);
  const found: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let environ: Buffer;
    try {
      // Another user's environment is unreadable (EACCES): not ours to kill anyway. A zombie's reads empty.
      environ = readFileSync(`/proc/${name}/environ`);
    } catch {
      continue;
    }
    if (environ.includes(needle) || environ.subarray(0, needle.length - 1).equals(needle.subarray(1))) found.push(Number(name));
  }
  return found;
}

/**
 * Kills every process whose environment carries `entry`, until none runs (or `deadlineMs` passed): how the
 * Node helpers, which cannot be subreapers, reach what a command daemonised out of its process group and
 * session. The mark is inherited through fork and exec; only a process that clears its environment escapes
 * (as with Jenkins' ProcessTreeKiller, which finds a build's processes by the same kind of cookie).
 */
export async function killMarkedAndWait(entry: string, deadlineMs = 5000): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const left = processesMarked(entry);
    if (left.length === 0) return true;
    if (Date.now() > until) return false;
    for (const pid of left) signal(pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Kills the group and resolves once none of it runs any more (or after `deadlineMs`, with false). */
export async function killGroupAndWait(pgid: number, deadlineMs = 5000): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    killGroup(pgid);
    if (!groupRunning(pgid)) return true;
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

import { readdirSync, readFileSync } from 'node:fs';

/** SIGKILLs a whole process group (a command and everything it started); a group already gone is fine. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

/** Whether any process of the group is still running: zombies (killed, not yet reaped by init) are dead. */
function groupRunning(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true; // No /proc: trust kill(2).
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so read after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
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

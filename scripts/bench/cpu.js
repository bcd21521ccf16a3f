// CPU accounting from /proc: what the machine as a whole used, and what one process tree used, over a
// measurement window. The bench uses the first to notice windows disturbed by other work on the
// machine, and the second for the gateway's CPU time per request (its children included).
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second of /proc's counters (USER_HZ: 100 on every Linux the bench runs on). */
const TICK_MS = 10;

/** Busy CPU time of the whole machine in ms (every core added up): user, nice, system, irq, softirq, steal. */
export function machineBusyMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return (user + nice + system + irq + softirq + (steal ?? 0)) * TICK_MS;
}

/** User and system (kernel: syscalls, the loopback's copies) CPU time one process has used so far, in ms. */
export function processCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(fields[11]) * TICK_MS, system: Number(fields[12]) * TICK_MS };
}

/** pid -> { ppid, ms } where ms is the process's own CPU plus that of its children it has reaped. */
function processTable() {
  const table = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields[0] is the state (field 3 of stat(5)): ppid is field 4, utime..cstime fields 14-17.
      const ms = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * TICK_MS;
      table.set(Number(name), { ppid: Number(fields[1]), ms });
    } catch {
      // The process ended while the table was read.
    }
  }
  return table;
}

/**
 * CPU ms used so far by each root's tree: every live descendant's own time plus what each has reaped.
 * The difference of two readings is exact over a window: a child reaped in between is counted in its
 * parent's reaped time at the end as it was in its own time at the start.
 */
export function treeCpuMs(roots) {
  const table = processTable();
  const children = new Map();
  for (const [pid, { ppid }] of table) {
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(pid);
  }
  return roots.map((root) => {
    let total = 0;
    const stack = [root];
    while (stack.length > 0) {
      const pid = stack.pop();
      total += table.get(pid)?.ms ?? 0;
      stack.push(...(children.get(pid) ?? []));
    }
    return total;
  });
}

/**
 * Starts a window over the given process trees; `end()` returns each tree's CPU ms, the window's wall
 * time, and what the rest of the machine used (`otherMs`): busy time spent outside this process's own
 * tree, which holds everything the bench started (gateways, upstreams, peers, wrk) and autocannon.
 */
export function startCpuWindow(pids) {
  const startedAt = performance.now();
  const machineBefore = machineBusyMs();
  const before = treeCpuMs([...pids, process.pid]);
  return {
    end() {
      const after = treeCpuMs([...pids, process.pid]);
      const machineMs = machineBusyMs() - machineBefore;
      const used = after.map((ms, i) => ms - before[i]);
      const oursMs = used.pop();
      return { wallMs: performance.now() - startedAt, treesMs: used, otherMs: Math.max(0, machineMs - oursMs) };
    },
  };
}

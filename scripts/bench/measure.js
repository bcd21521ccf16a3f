// One scenario, measured fairly: its target and baselines take turns (interleaved) over several rounds,
// so that a slow minute of the machine falls on all of them alike; each figure is the median of the
// rounds, with their min and max. A window in which the rest of the machine was busy is measured again.
import { startCpuWindow } from './cpu.js';
import { runLoad } from './load.js';

/** A window is disturbed when processes outside the bench used more than this share of one core. */
const DISTURBED_CORE_SHARE = 0.1;

const median = (values) => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** { median, min, max } of a list of numbers (nulls when there are none). */
export function spread(values) {
  const finite = values.filter(Number.isFinite);
  return { median: median(finite), min: finite.length ? Math.min(...finite) : null, max: finite.length ? Math.max(...finite) : null };
}

/** One measured window of one target: warm-up, then the load with the CPU of its processes sampled. */
async function measureWindow(entry, plan, warmupS) {
  const load = { connections: plan.connections, ...entry.load };
  const run = entry.run ?? runLoad;
  if (warmupS > 0) await run({ ...load, durationS: warmupS });
  // What the load left behind (an async call's runs) is done before the window and after it, outside both.
  await entry.settle?.();
  const pids = entry.pids?.() ?? [];
  const window = startCpuWindow(pids);
  const result = await run({ ...load, durationS: plan.measureS });
  const cpu = window.end();
  await entry.settle?.();
  const requests = result.rps * (cpu.wallMs / 1000);
  const cpuMs = pids.length > 0 ? cpu.treesMs.reduce((sum, ms) => sum + ms, 0) : null;
  return {
    ...result,
    cpu_us_per_req: cpuMs !== null && requests > 0 ? (cpuMs * 1000) / requests : null,
    other_cpu_share: cpu.otherMs / cpu.wallMs,
  };
}

/** Measures a window, again (up to `plan.retries` times) while other processes disturb it; keeps the calmest. */
async function calmWindow(entry, plan, warmupS) {
  let best;
  for (let attempt = 0; attempt <= plan.retries; attempt++) {
    const window = { ...(await measureWindow(entry, plan, attempt === 0 ? warmupS : plan.rewarmS)), attempts: attempt + 1 };
    if (!best || window.other_cpu_share < best.other_cpu_share) best = window;
    if (window.other_cpu_share <= DISTURBED_CORE_SHARE) break;
  }
  best.disturbed = best.other_cpu_share > DISTURBED_CORE_SHARE;
  return best;
}

/**
 * Measures every entry `plan.rounds` times, taking turns, the order rotated each round. An entry is
 * `{ name, load, pids?: () => number[], run?, settle? }`: `pids` are the process trees whose CPU counts as the
 * target's (the gateway and its children); `run(load)` replaces the HTTP load generator (it resolves to
 * runLoad's { rps, p50, p99, errors, non2xx }, rps being whatever the entry counts: WebSocket messages, say);
 * `settle()` is awaited after the warm-up and after the window, outside the measured time.
 * Returns one summary per entry, in the given order.
 */
export async function measureInterleaved(entries, plan) {
  const windows = entries.map(() => []);
  for (let round = 0; round < plan.rounds; round++) {
    for (let turn = 0; turn < entries.length; turn++) {
      const index = (turn + round) % entries.length;
      // The first round warms each target up (JIT, connection pools); later rounds only re-warm briefly.
      windows[index].push(await calmWindow(entries[index], plan, round === 0 ? plan.warmupS : plan.rewarmS));
    }
  }
  return entries.map((entry, i) => summarise(entry.name, windows[i]));
}

function summarise(name, windows) {
  const of = (key) => spread(windows.map((w) => w[key]));
  const rps = of('rps');
  return {
    name,
    rps: rps.median,
    rps_min: rps.min,
    rps_max: rps.max,
    p50: of('p50').median,
    p99: of('p99').median,
    p99_max: of('p99').max,
    cpu_us_per_req: of('cpu_us_per_req').median,
    errors: windows.reduce((sum, w) => sum + w.errors, 0),
    non2xx: windows.reduce((sum, w) => sum + w.non2xx, 0),
    rounds: windows.length,
    disturbed_rounds: windows.filter((w) => w.disturbed).length,
    repeated_windows: windows.reduce((sum, w) => sum + w.attempts - 1, 0),
    other_cpu_share_max: of('other_cpu_share').max,
  };
}

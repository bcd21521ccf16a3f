import { readFileSync } from 'node:fs';
import { alive } from '../support/executables.js';
import { eventually } from '../support/eventually.js';
import type { GatewayProcess } from '../support/gateway-process.js';

/** What each spawner's helper runs, as /proc/<pid>/cmdline shows it. */
const HELPER_PROGRAM = { native: 'tkgate-spawn-helper', node: 'spawn-helper.js' } as const;
export type Spawner = keyof typeof HELPER_PROGRAM;

/** A process's argv, or undefined once it is gone. */
export function argvOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return undefined;
  }
}

/**
 * The running spawn helpers of one gateway (of one spawner, or either): the pids its log announced
 * (`exec spawn helper started`), since no helper's argv names the gateway. Waits for `atLeast` of them
 * (the default pool, spawn_helpers 2, fills up with any run), so that a test killing them all gets all.
 */
export async function helperPids(gateway: GatewayProcess, spawner?: Spawner, atLeast = 2): Promise<number[]> {
  const programs = spawner ? [HELPER_PROGRAM[spawner]] : Object.values(HELPER_PROGRAM);
  const running = () =>
    gateway.logs
      .filter((record) => record.msg === 'exec spawn helper started')
      .map((record) => Number(record.pid))
      .filter((pid) => alive(pid) && programs.some((program) => argvOf(pid)?.some((arg) => arg.endsWith(program))));
  return eventually(`${atLeast} spawn helpers of this gateway`, () => (running().length >= atLeast ? running() : undefined));
}

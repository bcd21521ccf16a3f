#!/usr/bin/env node
// `npm test`: every test file, in two passes so CI stays within its time on a 2-core machine.
// Most suites wait on databases, child processes and sockets rather than the CPU, so they run two files at a time
// (mocha --parallel: a worker process per file, each with its own databases and ports). The suites that put a
// deadline on the gateway's own latency, or that load the machine themselves, run afterwards one at a time, alone.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

const ALL = 'build/test/**/*.test.js';
/** Files that must not share the machine with another suite (keep in step with DEVELOPERS.md "Test tiers"). */
const SERIAL = [
  'build/test/bench/**/*.test.js',
  'build/test/toolkits/hot-reload.test.js',
  'build/test/toolkits/reload-resilience.test.js',
  // Both build the release into build/release: at once, one deletes what the other packs.
  'build/test/release/release.test.js',
  'build/test/release/image.test.js',
  // Three gateways and a thousand commands in half a minute per database: its neighbours' deadlines would feel it.
  'build/test/scale/runs-burst.test.js',
];

const jobs = process.env.TKGATE_TEST_JOBS ?? '2';
// Both passes' failures, one line each, printed again at the very end (scripts/spec-with-recap.cjs).
const recap = 'build/test-failures.txt';
rmSync(recap, { force: true });
// Each file's wall time (scripts/file-durations.cjs), the slowest named at the end: CI's time budget is spent there.
const durations = 'build/test-durations.txt';
rmSync(durations, { force: true });
const mocha = (args, env = {}) =>
  spawnSync(process.execPath, ['node_modules/mocha/bin/mocha.js', '--reporter', './scripts/spec-with-recap.cjs', ...args], {
    stdio: 'inherit',
    env: { ...process.env, TKGATE_TEST_RECAP: recap, ...env },
  }).status ?? 1;

const parallelStatus = mocha(
  ['--parallel', '--jobs', jobs, '--require', './scripts/file-durations.cjs', ...SERIAL.flatMap((pattern) => ['--ignore', pattern]), ALL],
  { TKGATE_TEST_DURATIONS: durations },
);
const serialStatus = mocha(SERIAL, { TKGATE_TEST_FILE_TIMES: durations });
if (existsSync(durations)) {
  // A file of several top-level suites has a line at each one's end: its time is the longest.
  const byFile = new Map();
  for (const [ms, file] of readFileSync(durations, 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split('\t')))
    byFile.set(file, Math.max(Number(ms), byFile.get(file) ?? 0));
  const slowest = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 25);
  process.stdout.write(
    `\nThe slowest test files (wall time, hooks included):\n${slowest.map(([file, ms]) => `${(ms / 1000).toFixed(0).padStart(5)} s  ${file}`).join('\n')}\n`,
  );
}
if (existsSync(recap)) {
  process.stdout.write(`\nFailures of both passes (parallel: exit ${parallelStatus}, serial: exit ${serialStatus}):\n${readFileSync(recap, 'utf8')}`);
}
process.exit(parallelStatus !== 0 ? parallelStatus : serialStatus);

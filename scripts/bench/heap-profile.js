// node scripts/bench/heap-profile.js <status|json> [--root DIR] [--seconds S]: where a request's heap bytes come from.
// The gateway of DIR (default this checkout) under wrk (1 thread, 50 connections, 5 s warm-up, S s sampled, default 6)
// with V8's sampling heap profiler (1 KiB interval, objects a scavenge collects included): bytes per request by the
// function that allocated them, and by that function and its two callers. Sampled, so a row moves by ~±50 B, and
// inlining moves bytes between a function and its caller: compare totals, or rows of one profile. The tables of
// docs/performance.md, "The proxied JSON call".
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort, startProcess } from './processes.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const PATHS = { status: '/auth/status', json: '/tk/app/bench/json' };
const scenario = process.argv[2];
if (!(scenario in PATHS)) {
  process.stderr.write('usage: node scripts/bench/heap-profile.js <status|json> [--root DIR] [--seconds S]\n');
  process.exit(2);
}
const option = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const root = path.resolve(option('--root') ?? path.join(here, '../..'));
const seconds = Number(option('--seconds') ?? 6);

const own = await import(pathToFileURL(path.join(root, 'scripts/bench/tkgate.js')).href);
const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-heap-'));
const upstreamPort = await freePort();
const upstream = await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], {
  env: { PORT: String(upstreamPort) },
  ready: (line) => line.startsWith('ready'),
});
const { config } = await own.prepareGateway(dir, { upstreamPort, tinyScript: own.writeTinyScript(dir) });
const out = path.join(dir, 'heap.json');
const gateway = await own.startTkgate(
  config,
  ['--import', path.join(here, 'heap-sampler.js')],
  { HEAP_OUT: out },
  path.join(root, 'packages/cli/dist/main.js'),
);
let requests;
try {
  const token = await own.login(gateway.base);
  const post = path.join(dir, 'post.lua');
  writeFileSync(post, 'wrk.method = "POST"\nwrk.body = \'{"q":"disk"}\'\nwrk.headers["Content-Type"] = "application/json"\n');
  const wrk = (s) =>
    execFileSync('wrk', [
      '-t1',
      '-c50',
      `-d${s}s`,
      '-H',
      `Authorization: Bearer ${token}`,
      ...(scenario === 'json' ? ['-s', post] : []),
      `${gateway.base}${PATHS[scenario]}`,
    ]).toString();
  wrk(5);
  process.kill(gateway.pid, 'SIGUSR2');
  requests = Number(wrk(seconds).match(/(\d+) requests in/)[1]);
  process.kill(gateway.pid, 'SIGUSR2');
  for (let i = 0; i < 100 && !existsSync(out); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  await new Promise((resolve) => setTimeout(resolve, 500));
} finally {
  await gateway.stop();
  await upstream.stop();
}

const profile = JSON.parse(readFileSync(out, 'utf8'));
const byFunction = new Map();
const bySite = new Map();
let total = 0;
const nameOf = ({ functionName, url, lineNumber }) => `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
const walk = (node, callers) => {
  const name = nameOf(node.callFrame);
  total += node.selfSize;
  byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
  const site = [name, ...callers.slice(0, 2)].join(' < ');
  bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
  for (const child of node.children) walk(child, [name, ...callers]);
};
walk(profile.head, []);
const top = (map, count) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, bytes]) => `${(bytes / requests).toFixed(0).padStart(6)}  ${key}`)
    .join('\n');
process.stdout.write(
  `${scenario} ${root}: ${requests} requests sampled, ${(total / requests).toFixed(0)} B per request\n\nby function:\n${top(byFunction, 60)}\n`,
);
process.stdout.write(`\nby function < caller < caller:\n${top(bySite, 60)}\n`);

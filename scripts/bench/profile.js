// node scripts/bench/profile.js <status|items|json|forwarded|tiny|file> [--no-profile] [--direct]: one bench scenario against a
// gateway started with `node --cpu-prof`, under wrk (1 thread, 50 connections, 2 s warm-up, 8 s measured).
// Prints requests/s, the gateway's CPU time per request, user and system (from /proc, so profiler-free with
// --no-profile), and the profile's top self time by function and by package. `file --direct` then measures the
// upstream answered directly, and the ratio. The profiles of docs/performance.md.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { processCpuMs } from './cpu.js';
import { freePort, startProcess } from './processes.js';
import { login, prepareGateway, startTkgate, writeTinyScript } from './tkgate.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCENARIOS = {
  status: '/auth/status',
  items: '/tk/app/bench/items?q=disk',
  json: '/tk/app/bench/json',
  // Scenario 15: the client's GET forwarded (upstream.forward: request), the same answer as json's.
  forwarded: '/tk/app/bench/forwarded',
  tiny: '/tk/app/bench/tiny',
  file: '/tk/app/bench/file',
};
const scenario = process.argv[2];
if (!(scenario in SCENARIOS)) {
  process.stderr.write(`usage: node scripts/bench/profile.js <${Object.keys(SCENARIOS).join('|')}> [--no-profile] [--direct]\n`);
  process.exit(2);
}
const profiling = !process.argv.includes('--no-profile');

/** CPU time (user + system) the process has used, in ms. */
function cpuMs(pid) {
  const { user, system } = processCpuMs(pid);
  return user + system;
}

/** Self time per key, as percentages of the profile, highest first. */
function selfTime(profile, keyOf, top) {
  const times = new Map();
  profile.samples.forEach((id, i) => times.set(id, (times.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byKey = new Map();
  let total = 0;
  for (const node of profile.nodes) {
    const time = times.get(node.id) ?? 0;
    total += time;
    const key = keyOf(node.callFrame);
    byKey.set(key, (byKey.get(key) ?? 0) + time);
  }
  return [...byKey]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, time]) => `${((100 * time) / total).toFixed(1).padStart(5)}%  ${key}`);
}

/** Time in samples whose stack holds the function (inclusive), as percentages, highest first. */
function totalTime(profile, keyOf, top) {
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const byKey = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const time = profile.timeDeltas[i] ?? 0;
    total += time;
    const seen = new Set();
    for (let node = byId.get(id); node; node = parent.get(node.id)) {
      const key = keyOf(node.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      byKey.set(key, (byKey.get(key) ?? 0) + time);
    }
  });
  return [...byKey]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, time]) => `${((100 * time) / total).toFixed(1).padStart(5)}%  ${key}`);
}

const functionOf = ({ functionName, url, lineNumber }) => `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber}`;
function packageOf({ functionName, url }) {
  if (!url) return functionName;
  if (url.startsWith('node:')) return 'node internals';
  const dependency = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/);
  if (dependency) return dependency[1];
  const own = url.match(/\/(packages|plugins)\/([^/]+)\//);
  return own ? `tkgate ${own[2]}` : url;
}

const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-profile-'));
const upstreamPort = await freePort();
const upstream = await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], {
  env: { PORT: String(upstreamPort) },
  ready: (line) => line.startsWith('ready'),
});
const { config } = await prepareGateway(dir, { upstreamPort, tinyScript: writeTinyScript(dir) });
const profileDir = path.join(dir, 'profile');
const gateway = await startTkgate(config, profiling ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
try {
  const token = await login(gateway.base);
  const postScript = path.join(dir, 'post.lua');
  writeFileSync(postScript, 'wrk.method = "POST"\nwrk.body = \'{"q":"disk"}\'\nwrk.headers["Content-Type"] = "application/json"\n');
  const hasWrk = (() => {
    try {
      execFileSync('wrk', ['--version'], { stdio: 'ignore' });
      return true;
    } catch (err) {
      return err.status === 1; // wrk --version exits 1 after printing its version
    }
  })();
  // Without wrk: autocannon (a devDependency), 50 connections, its requests/s in wrk's words.
  const autocannon = (seconds) => {
    const args = ['-c', '50', '-d', String(seconds), '-j', '-H', `Authorization=Bearer ${token}`];
    if (scenario === 'json') args.push('-m', 'POST', '-H', 'Content-Type=application/json', '-b', '{"q":"disk"}');
    const result = JSON.parse(
      execFileSync(path.join(here, '../../node_modules/.bin/autocannon'), [...args, `${gateway.base}${SCENARIOS[scenario]}`]).toString(),
    );
    return `Requests/sec: ${result.requests.average}`;
  };
  const wrk = (seconds) => (hasWrk ? wrkRun(seconds) : autocannon(seconds));
  const wrkRun = (seconds) =>
    execFileSync('wrk', [
      '-t1',
      '-c50',
      `-d${seconds}s`,
      '-H',
      `Authorization: Bearer ${token}`,
      ...(scenario === 'json' ? ['-s', postScript] : []),
      `${gateway.base}${SCENARIOS[scenario]}`,
    ]).toString();
  wrk(2);
  const before = processCpuMs(gateway.pid);
  const output = wrk(8);
  const after = processCpuMs(gateway.pid);
  const used = after.user + after.system - before.user - before.system;
  const rps = Number(output.match(/Requests\/sec:\s+([\d.]+)/)[1]);
  const perRequest = (ms) => ((ms * 1000) / (rps * 8)).toFixed(1);
  process.stdout.write(
    `${scenario}: ${rps.toFixed(0)} req/s; gateway CPU ${used} ms over 8 s, ${perRequest(used)} µs per request ` +
      `(user ${perRequest(after.user - before.user)}, system ${perRequest(after.system - before.system)})\n`,
  );
  if (scenario === 'file' && process.argv.includes('--direct')) {
    // The same download from the upstream itself, right after: the ratio the bench's scenario 4 judges.
    const direct = (seconds) => execFileSync('wrk', ['-t1', '-c50', `-d${seconds}s`, `http://127.0.0.1:${upstreamPort}/1mb`]).toString();
    direct(2);
    const upstreamBefore = cpuMs(upstream.pid);
    const directRps = Number(direct(8).match(/Requests\/sec:\s+([\d.]+)/)[1]);
    const upstreamUsed = cpuMs(upstream.pid) - upstreamBefore;
    process.stdout.write(
      `upstream direct: ${directRps.toFixed(0)} req/s; upstream CPU ${((upstreamUsed * 1000) / (directRps * 8)).toFixed(1)} µs per request; ratio ${(rps / directRps).toFixed(2)}\n`,
    );
  }
} finally {
  await gateway.stop();
  await upstream.stop();
}
if (profiling) {
  const profile = JSON.parse(readFileSync(path.join(profileDir, readdirSync(profileDir)[0]), 'utf8'));
  process.stdout.write(`\nself time by function (whole run, start-up included):\n${selfTime(profile, functionOf, 70).join('\n')}\n`);
  process.stdout.write(`\ntotal time by function (the function and what it calls):\n${totalTime(profile, functionOf, 60).join('\n')}\n`);
  process.stdout.write(`\nself time by package:\n${selfTime(profile, packageOf, 20).join('\n')}\n`);
}

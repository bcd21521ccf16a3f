// node scripts/bench/cpu-split.js <status|json> [--rounds N] [--seconds S] [--compare DIR]: user and system (kernel) CPU per
// request of the gateway and of the bare baselines (bare Koa, fast-gateway; bare Koa + undici for json) under wrk's
// 50 connections, in turns. Where a gateway's CPU per request goes between its JavaScript and its system calls.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { processCpuMs } from './cpu.js';
import { envArguments, freePort, startProcess } from './processes.js';
import { login, prepareGateway, startTkgate, writeTinyScript } from './tkgate.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const scenario = args[0] ?? 'status';
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(option('--rounds', 3));
const seconds = Number(option('--seconds', 4));
const compare = option('--compare');
// --env K=V (repeatable): a second tkgate of this build with that environment, measured in the same turns.
const env = envArguments(args);

const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-split-'));
const upstreamPort = await freePort();
const upstream = await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], {
  env: { PORT: String(upstreamPort) },
  ready: (l) => l.startsWith('ready'),
});
const { config } = await prepareGateway(dir, { upstreamPort, tinyScript: writeTinyScript(dir) });
const post = path.join(dir, 'post.lua');
writeFileSync(post, 'wrk.method = "POST"\nwrk.body = \'{"q":"disk"}\'\nwrk.headers["Content-Type"] = "application/json"\n');
const route = scenario === 'json' ? '/tk/app/bench/json' : '/auth/status';
const targets = [];
const gateway = await startTkgate(config, []);
const token = await login(gateway.base);
targets.push({ name: 'tkgate', proc: gateway, url: `${gateway.base}${route}`, token });
if (Object.keys(env).length) {
  const other = await startTkgate(config, [], env);
  targets.push({ name: `tkgate ${JSON.stringify(env)}`, proc: other, url: `${other.base}${route}`, token });
}
if (compare) {
  // A database made by the compared checkout's own bench code: an older build refuses newer migrations.
  const own = await import(pathToFileURL(path.join(path.resolve(compare), 'scripts/bench/tkgate.js')).href);
  const otherDir = mkdtempSync(path.join(tmpdir(), 'tkgate-split-compared-'));
  const prepared = await own.prepareGateway(otherDir, { upstreamPort, tinyScript: own.writeTinyScript(otherDir) });
  const other = await startTkgate(prepared.config, [], {}, path.resolve(compare, 'packages/cli/dist/main.js'));
  targets.push({ name: `compare ${compare}`, proc: other, url: `${other.base}${route}`, token: await own.login(other.base) });
}
for (const script of scenario === 'json' ? ['bare-koa-proxy.js', 'fast-gateway.js'] : ['bare-koa.js', 'fast-gateway.js']) {
  const port = await freePort();
  const proc = await startProcess(process.execPath, [path.join(here, 'servers', script)], {
    env: { PORT: String(port), UPSTREAM_PORT: String(upstreamPort), TOKEN: token },
    ready: (l) => l.startsWith('ready'),
  });
  targets.push({ name: script, proc, url: `http://127.0.0.1:${port}${scenario === 'json' ? '/json' : '/api/auth/status'}`, token });
}
const wrk = ({ url, token }, s) =>
  execFileSync('wrk', ['-t1', '-c50', `-d${s}s`, '-H', `Authorization: Bearer ${token}`, ...(scenario === 'json' ? ['-s', post] : []), url], {
    encoding: 'utf8',
  });
const totals = new Map(targets.map((t) => [t.name, { user: 0, system: 0, requests: 0 }]));
for (const t of targets) wrk(t, 2);
for (let r = 0; r < rounds; r++)
  for (const t of targets) {
    const before = processCpuMs(t.proc.pid);
    const out = wrk(t, seconds);
    const after = processCpuMs(t.proc.pid);
    const requests = Number(out.match(/(\d+) requests in/)[1]);
    if (/Non-2xx/.test(out)) throw new Error(`${t.name} answered errors:\n${out}`);
    const sum = totals.get(t.name);
    sum.user += after.user - before.user;
    sum.system += after.system - before.system;
    sum.requests += requests;
  }
process.stdout.write(`${scenario}, load ${loadavg()[0].toFixed(1)}\n`);
for (const [name, { user, system, requests }] of totals)
  process.stdout.write(
    `  ${name.padEnd(40)} ${((user * 1000) / requests).toFixed(1)} µs user + ${((system * 1000) / requests).toFixed(1)} µs system = ${(((user + system) * 1000) / requests).toFixed(1)} µs/req, ${Math.round(requests / rounds / seconds)} req/s\n`,
  );
for (const t of targets) await t.proc.stop();
await upstream.stop();

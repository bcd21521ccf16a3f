// node scripts/bench/allocations.js <status|json|forwarded> [--seconds S] [--rounds R] [--compare DIR]: bytes allocated on the
// gateway's heap and garbage collections per request under wrk (1 thread, 50 connections), read from V8's own
// `--trace-gc-nvp` lines (`allocated=` is what the heap took since the collection before), beside bare Koa (status)
// or bare Koa + undici (json) measured in the same run, in interleaved rounds; `forwarded` (scenario 15): the
// forwarded GET beside the context POST of json, on the same gateway. Allocation per request does not
// depend on the machine's load as CPU time does: it is the steadier view of what a request costs the heap
// (and later the collector). `allocated=` is known only at a collection, so a window's sum is off by up to one
// young generation at each end: the processes run with a 1 MB semi-space (--max-semi-space-size=1), so that a
// window of a few hundred requests still spans many collections (the collection counts are then this setting's,
// for comparing builds only). Bounded: each window S seconds (default 4) after a 2 s warm-up, on 127.0.0.1.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runLoad } from './load.js';
import { freePort, startProcess } from './processes.js';
import { login, startTkgate } from './tkgate.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const scenario = process.argv[2];
if (!['status', 'json', 'forwarded'].includes(scenario)) {
  process.stderr.write('usage: node scripts/bench/allocations.js <status|json|forwarded> [--seconds S] [--rounds R] [--compare DIR]\n');
  process.exit(2);
}
const option = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const seconds = Number(option('--seconds') ?? 4);
const rounds = Number(option('--rounds') ?? 2);
const compareDir = option('--compare');
const GC_FLAGS = ['--trace-gc', '--trace-gc-nvp', '--max-semi-space-size=1'];
const started = [];

async function startServer(script, env = {}) {
  const port = await freePort();
  const proc = await startProcess(process.execPath, [...GC_FLAGS, path.join(here, 'servers', script)], {
    env: { PORT: String(port), ...env },
    ready: (l) => l.startsWith('ready'),
    timeoutMs: 30_000,
  });
  started.push(proc);
  return { ...proc, url: `http://127.0.0.1:${port}` };
}

async function gatewayOf(root, upstreamPort) {
  const own = await import(pathToFileURL(path.join(root, 'scripts/bench/tkgate.js')).href);
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-alloc-'));
  mkdirSync(dir, { recursive: true });
  const { config } = await own.prepareGateway(dir, { upstreamPort, tinyScript: own.writeTinyScript(dir) });
  const gw = await startTkgate(config, GC_FLAGS, {}, path.join(root, 'packages/cli/dist/main.js'));
  started.push(gw);
  return { ...gw, url: gw.base, auth: { authorization: `Bearer ${await login(gw.base)}` } };
}

/** The GC lines a process wrote after `from` characters of its output: bytes allocated, collections, pause ms. */
function gcSince(proc, from) {
  const text = proc.output().slice(from);
  let bytes = 0;
  let scavenges = 0;
  let marks = 0;
  let pauseMs = 0;
  for (const line of text.split('\n')) {
    const allocated = /\ballocated=(\d+)/.exec(line);
    if (!allocated) continue;
    bytes += Number(allocated[1]);
    pauseMs += Number(/\bpause=([\d.]+)/.exec(line)?.[1] ?? 0);
    if (/\bgc=s\b/.test(line)) scavenges++;
    else marks++;
  }
  return { bytes, scavenges, marks, pauseMs };
}

async function measure(row) {
  await runLoad({ ...row.load, connections: 50, durationS: 2 });
  const from = row.proc.output().length;
  const result = await runLoad({ ...row.load, connections: 50, durationS: seconds });
  const requests = result.rps * seconds;
  const gc = gcSince(row.proc, from);
  return {
    name: row.name,
    rps: Math.round(result.rps),
    bytes_per_req: Math.round(gc.bytes / requests),
    scavenges_per_10k: Number(((gc.scavenges * 10_000) / requests).toFixed(2)),
    mark_compacts: gc.marks,
    gc_pause_us_per_req: Number(((gc.pauseMs * 1000) / requests).toFixed(1)),
    load: loadavg()[0].toFixed(1),
  };
}

const root = path.resolve(here, '../..');
try {
  const upstream = await startServer('upstream.js');
  const rows = [];
  const tk = await gatewayOf(root, upstream.url.split(':').pop());
  const compared = compareDir ? await gatewayOf(path.resolve(compareDir), upstream.url.split(':').pop()) : undefined;
  const jsonPost = (auth) => ({ method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"q":"disk"}' });
  const gatewayLoad = (gw) =>
    scenario === 'status'
      ? { url: `${gw.url}/auth/status`, headers: gw.auth }
      : scenario === 'forwarded'
        ? { url: `${gw.url}/tk/app/bench/forwarded`, headers: gw.auth }
        : { url: `${gw.url}/tk/app/bench/json`, ...jsonPost(gw.auth) };
  rows.push({ name: 'tkgate', proc: tk, load: gatewayLoad(tk) });
  if (compared) rows.push({ name: `tkgate, --compare ${compareDir}`, proc: compared, load: gatewayLoad(compared) });
  if (scenario === 'forwarded') {
    // The baseline of scenario 15: the context POST of the same answer, on the same gateways.
    rows.push({ name: 'tkgate context POST', proc: tk, load: { url: `${tk.url}/tk/app/bench/json`, ...jsonPost(tk.auth) } });
    if (compared)
      rows.push({
        name: `tkgate context POST, --compare ${compareDir}`,
        proc: compared,
        load: { url: `${compared.url}/tk/app/bench/json`, ...jsonPost(compared.auth) },
      });
  } else if (scenario === 'status') {
    const koa = await startServer('bare-koa.js');
    rows.push({ name: 'bare Koa', proc: koa, load: { url: `${koa.url}/api/auth/status` } });
  } else {
    const proxy = await startServer('bare-koa-proxy.js', { UPSTREAM_PORT: upstream.url.split(':').pop() });
    const context = JSON.stringify({
      user_id: 1,
      username: 'bench',
      power: 100,
      request_id: '00000000-0000-4000-8000-000000000000',
      payload: {},
      db_context: {},
    });
    rows.push({
      name: 'bare Koa + undici',
      proc: proxy,
      load: { url: `${proxy.url}/json`, method: 'POST', headers: { 'content-type': 'application/json' }, body: context },
    });
  }
  for (let r = 0; r < rounds; r++) for (const row of rows) process.stdout.write(`round ${r + 1} ${JSON.stringify(await measure(row))}\n`);
} finally {
  for (const proc of started) await proc.stop();
}

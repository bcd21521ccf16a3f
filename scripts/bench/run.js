// npm run bench [-- --quick | --smoke] [--out DIR]: what each part of tkgate costs, against baselines
// measured in the same run. Full: under 4 minutes; --quick: under a minute; --smoke: seconds (CI).
// Everything runs on 127.0.0.1 with bounded durations; results go to bench/results/latest.{json,md}.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadGenerator, runLoad } from './load.js';
import { freePort, rssMb, sampleRss, sleep, startProcess, treeCpuMs } from './processes.js';
import { nginxInstalled, startNginx } from './servers/nginx.js';
import { startWebhook, webhookInstalled } from './servers/webhook.js';
import { STORM_USER, login, prepareGateway, startTkgate, writeTinyScript } from './tkgate.js';
import { insertSessions, clearSessions } from './sessions.js';
import { printTable, writeReports } from './report.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const mode = process.argv.includes('--smoke') ? 'smoke' : process.argv.includes('--quick') ? 'quick' : 'full';
const PLAN = {
  full: { warmupS: 2, measureS: 8, sessions: 100_000, settleMs: 20_000, stormS: 8 },
  quick: { warmupS: 1, measureS: 2, sessions: 50_000, settleMs: 3_000, stormS: 2 },
  smoke: { warmupS: 1, measureS: 1, sessions: 2_000, settleMs: 500, stormS: 1 },
}[mode];
const CONNECTIONS = 50;
const outIndex = process.argv.indexOf('--out');
const outDir = outIndex > 0 ? path.resolve(process.argv[outIndex + 1]) : path.join(root, 'bench/results');

const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-bench-'));
const started = [];
const track = (proc) => (started.push(proc), proc);

/** Warms up, then measures one target; samples `rssPid` (the gateway) for its peak RSS. */
async function measure(load, rssPid) {
  await runLoad({ ...load, connections: load.connections ?? CONNECTIONS, durationS: PLAN.warmupS });
  const stopSampling = rssPid ? sampleRss(rssPid) : undefined;
  const result = await runLoad({ ...load, connections: load.connections ?? CONNECTIONS, durationS: PLAN.measureS });
  return { ...result, peak_rss_mb: stopSampling ? round(stopSampling()) : undefined };
}

/** measure(), plus the gateway's CPU time per request (ms, the process and its children: workers, helpers). */
async function measureWithCpu(load, pid) {
  await runLoad({ ...load, connections: load.connections ?? CONNECTIONS, durationS: PLAN.warmupS });
  const before = treeCpuMs(pid);
  const stopSampling = sampleRss(pid);
  const result = await runLoad({ ...load, connections: load.connections ?? CONNECTIONS, durationS: PLAN.measureS });
  const cpu_ms_per_req = round((treeCpuMs(pid) - before) / (result.rps * PLAN.measureS), 3);
  return { ...result, peak_rss_mb: round(stopSampling()), cpu_ms_per_req };
}

/**
 * RSS once the idle gateway's garbage collector has run: the lowest of samples taken over the settle
 * window (one reading after a fixed wait lands before or after V8's idle collection, by chance).
 */
async function settledRss(pid) {
  let lowest = Infinity;
  for (let waited = 0; waited < PLAN.settleMs; waited += 250) {
    await sleep(250);
    lowest = Math.min(lowest, rssMb(pid));
  }
  return lowest;
}

const round = (n, digits = 1) => (Number.isFinite(n) ? Number(n.toFixed(digits)) : null);

async function main() {
  const results = [];
  const upstreamPort = await freePort();
  const upstream = track(await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], { env: { PORT: String(upstreamPort) }, ready: (l) => l.startsWith('ready') }));
  const koaPort = await freePort();
  const koa = track(await startProcess(process.execPath, [path.join(here, 'servers/bare-koa.js')], { env: { PORT: String(koaPort) }, ready: (l) => l.startsWith('ready') }));
  const tinyScript = writeTinyScript(dir);
  const { config, gotConfig, filename } = await prepareGateway(dir, { upstreamPort, tinyScript });
  let gateway = track(await startTkgate(config));
  const token = await login(gateway.base);
  const auth = { authorization: `Bearer ${token}` };
  const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
  const context = JSON.stringify({ user_id: 1, username: 'bench', power: 100, core_group_id: null, core_group_name: null, toolkit_group: null, request_id: '00000000-0000-4000-8000-000000000000', payload: {}, db_context: {} });
  const row = (scenario, target, baseline, goal) => {
    const ratio = baseline?.rps ? round(target.rps / baseline.rps, 2) : null;
    const entry = { scenario, target, baseline, ratio, goal: goal?.text ?? null, met: goal ? goal.check(target, baseline, ratio) : null };
    results.push(entry);
    process.stderr.write(`  ${scenario}: ${round(target.rps, 0)} req/s${baseline ? ` vs ${baseline.name} ${round(baseline.rps, 0)} (${ratio}x)` : ''}\n`);
    return entry;
  };
  const atLeast = (x) => ({ text: `>= ${x}x`, check: (_t, _b, ratio) => ratio !== null && ratio >= x });

  process.stderr.write(`tkgate bench (${mode}, ${loadGenerator}, ${CONNECTIONS} connections, ${cpus().length} cores)\n`);

  // 1. GET /auth/status with a valid token, vs. bare Koa answering the same JSON.
  const bareKoaStatus = { name: 'bare Koa', ...(await measure({ url: `http://127.0.0.1:${koaPort}/api/auth/status` })) };
  row('1. GET /auth/status', await measureWithCpu({ url: `${gateway.base}/auth/status`, headers: auth }, gateway.pid), bareKoaStatus, atLeast(0.85));
  // 1w. The same on `server.workers: 2` (node:cluster); its CPU counts the primary and both workers.
  {
    const clustered = track(await startTkgate(config, [], { TKGATE_WORKERS: '2' }));
    const clusteredAuth = { authorization: `Bearer ${await login(clustered.base)}` };
    row('1w. GET /auth/status, workers: 2', await measureWithCpu({ url: `${clustered.base}/auth/status`, headers: clusteredAuth }, clustered.pid), bareKoaStatus, null);
    await clustered.stop();
  }

  // 2. An internal endpoint: auth, nine steps, client_filter, one inject_db_context, a pseudo select on SQLite.
  row('2. internal endpoint', await measure({ url: `${gateway.base}/tk/app/bench/items?q=disk`, headers: auth }, gateway.pid), { name: 'bare Koa', ...(await measure({ url: `http://127.0.0.1:${koaPort}/api/tk/app/bench/items?q=disk` })) }, atLeast(0.6));

  // 3. An http endpoint (JSON) to a raw node:http upstream, vs. the upstream directly, and vs. nginx.
  const jsonPost = { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"q":"disk"}' };
  const direct = { name: 'upstream direct', ...(await measure({ url: `${upstreamUrl}/json`, method: 'POST', headers: { 'content-type': 'application/json' }, body: context })) };
  const viaGateway = await measure({ url: `${gateway.base}/tk/app/bench/json`, ...jsonPost }, gateway.pid);
  row('3. http endpoint (JSON)', viaGateway, direct, atLeast(0.45));
  {
    const onGot = track(await startTkgate(gotConfig));
    const gotToken = await login(onGot.base);
    const viaGot = await measure({ url: `${onGot.base}/tk/app/bench/json`, ...jsonPost, headers: { ...jsonPost.headers, authorization: `Bearer ${gotToken}` } }, onGot.pid);
    row('3a. http endpoint on got (reference)', viaGot, direct, null);
    await onGot.stop();
  }
  if (nginxInstalled()) {
    const nginxPort = await freePort();
    const nginx = track(await startNginx(path.join(dir, 'nginx'), nginxPort, upstreamPort));
    const viaNginx = await measure({ url: `http://127.0.0.1:${nginxPort}/json`, method: 'POST', headers: { 'content-type': 'application/json' }, body: context });
    row('3b. nginx proxy_pass (reference)', viaNginx, direct, null);
    row('3c. http endpoint vs nginx', viaGateway, { name: 'nginx proxy_pass', ...viaNginx }, null);
    await nginx.stop();
  }

  // 4. An http passthrough of a 1 MB body, vs. the upstream directly.
  row('4. http passthrough 1 MB', await measure({ url: `${gateway.base}/tk/app/bench/file`, headers: auth, connections: 10 }, gateway.pid), { name: 'upstream direct', ...(await measure({ url: `${upstreamUrl}/1mb`, connections: 10 })) }, null);

  // 5. An exec endpoint running a tiny script, vs. adnanh/webhook running the same script.
  const viaExec = await measure({ url: `${gateway.base}/tk/app/bench/tiny`, headers: auth }, gateway.pid);
  if (webhookInstalled()) {
    const webhookPort = await freePort();
    const webhook = track(await startWebhook(dir, webhookPort, tinyScript));
    const viaWebhook = { name: 'webhook', ...(await measure({ url: `http://127.0.0.1:${webhookPort}/hooks/tiny` })) };
    await webhook.stop();
    row('5. exec endpoint', viaExec, viaWebhook, { text: '>= 1.0x, p99 <= 2x', check: (t, b, ratio) => ratio >= 1 && t.p99 <= 2 * b.p99 });
  } else {
    row('5. exec endpoint', viaExec, null, null);
  }

  // 6. A login storm (argon2id) while status calls run at a steady rate: the event loop must stay responsive.
  const stopSampling = sampleRss(gateway.pid);
  const [logins, statusDuring] = await Promise.all([
    runLoad({ url: `${gateway.base}/auth/login`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(STORM_USER), connections: 16, durationS: PLAN.stormS, force: 'autocannon' }),
    runLoad({ url: `${gateway.base}/auth/status`, headers: auth, connections: 10, durationS: PLAN.stormS, rate: 200 }),
  ]);
  const storm = row('6. login storm: logins', { ...logins, peak_rss_mb: round(stopSampling()) }, null, null);
  storm.status_during = statusDuring;
  row('6b. status during the storm', statusDuring, null, { text: 'p99 < 20 ms', check: (t) => t.p99 < 20 });

  // 7. Memory: RSS with 0 and with N live sessions, each after the gateway has settled.
  await gateway.stop();
  await clearSessions(filename);
  gateway = track(await startTkgate(config));
  const rssEmpty = await settledRss(gateway.pid);
  await gateway.stop();
  await insertSessions(filename, PLAN.sessions);
  gateway = track(await startTkgate(config));
  const rssLoaded = rssMb(gateway.pid);
  const rssFull = await settledRss(gateway.pid);
  await gateway.stop();
  const memory = row(`7. memory: ${PLAN.sessions.toLocaleString('en')} sessions`, { rps: null, p50: null, p99: null, peak_rss_mb: round(rssFull) }, null, {
    text: '< 60 MB for 100k',
    check: () => ((rssFull - rssEmpty) * 100_000) / PLAN.sessions < 60,
  });
  memory.rss_empty_mb = round(rssEmpty);
  memory.rss_delta_mb = round(rssFull - rssEmpty);
  memory.rss_just_loaded_mb = round(rssLoaded);

  await upstream.stop();
  await koa.stop();
  const report = { mode, load_generator: loadGenerator, connections: CONNECTIONS, cores: cpus().length, node: process.version, date: new Date().toISOString(), plan: PLAN, results };
  printTable(report);
  mkdirSync(outDir, { recursive: true });
  writeReports(outDir, report);
  process.stderr.write(`written: ${path.join(outDir, 'latest.json')}, latest.md\n`);
}

main()
  .catch((err) => {
    process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
    for (const proc of started) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
        process.stderr.write(`--- ${proc.child.spawnargs.slice(0, 3).join(' ')} exited (${proc.child.exitCode ?? proc.child.signalCode}):\n${proc.output().slice(-3000)}\n`);
      }
    }
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const proc of started) await proc.stop().catch(() => undefined);
  });

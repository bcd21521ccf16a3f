// node scripts/bench/exec-compare.js [rounds]: the exec scenario (tiny script, wrk 1 thread 50 connections,
// 2 s warm-up, 8 s measured) on tkgate with the native spawn helper, tkgate with the Node spawn helpers, and
// adnanh/webhook, measured in turns so that the machine's other load falls on all three alike.
// CPU per request from /proc: the server itself; its spawn helpers (tkgate); and the commands, which the
// process that waits for them (a helper, or webhook) accounts as its children's time (cutime + cstime).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startProcess } from './processes.js';
import { startWebhook } from './servers/webhook.js';
import { login, prepareGateway, startTkgate, writeTinyScript } from './tkgate.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const rounds = Number(process.argv[2] ?? 3);

/** [own, children's] CPU ms of a process, from /proc/<pid>/stat. */
function cpu(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return [(Number(fields[11]) + Number(fields[12])) * 10, (Number(fields[13]) + Number(fields[14])) * 10];
}
/** The helpers of one spawner (their argv does not name the gateway: each gateway here has a spawner of its own). */
const helperPids = (spawner) => {
  try {
    return execFileSync('pgrep', ['-f', spawner === 'native' ? 'tkgate-spawn-helper$' : 'spawn-helper\\.js$'])
      .toString()
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    return [];
  }
};
/** Own CPU of the server, own CPU of its helpers, CPU of the commands (children's time of whoever waits). */
function sample(target) {
  const [own, children] = cpu(target.pid);
  let helpers = 0;
  let commands = children;
  for (const pid of target.helpers ? helperPids(target.spawner) : []) {
    const [helperOwn, helperChildren] = cpu(pid);
    helpers += helperOwn;
    commands += helperChildren;
  }
  return { own, helpers, commands };
}

const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-exec-compare-'));
const upstreamPort = await freePort();
const upstream = await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], {
  env: { PORT: String(upstreamPort) },
  ready: (line) => line.startsWith('ready'),
});
const tinyScript = writeTinyScript(dir);
const targets = [];
for (const spawner of ['native', 'node']) {
  process.env.BENCH_SPAWNER = spawner;
  const gatewayDir = path.join(dir, spawner);
  mkdirSync(gatewayDir);
  const { config } = await prepareGateway(gatewayDir, { upstreamPort, tinyScript });
  const gateway = await startTkgate(config);
  targets.push({
    name: `tkgate ${spawner}`,
    pid: gateway.pid,
    helpers: true,
    spawner,
    url: `${gateway.base}/tk/app/bench/tiny`,
    headers: ['-H', `Authorization: Bearer ${await login(gateway.base)}`],
    stop: gateway.stop,
  });
}
const webhookPort = await freePort();
const webhook = await startWebhook(dir, webhookPort, tinyScript);
targets.push({ name: 'webhook', pid: webhook.pid, helpers: false, url: `http://127.0.0.1:${webhookPort}/hooks/tiny`, headers: [], stop: webhook.stop });

const results = new Map(targets.map((target) => [target.name, []]));
try {
  for (let round = 1; round <= rounds; round++) {
    for (const target of targets) {
      const wrk = (seconds) => execFileSync('wrk', ['-t1', '-c50', `-d${seconds}s`, '--latency', ...target.headers, target.url]).toString();
      wrk(2);
      const before = sample(target);
      const output = wrk(8);
      const after = sample(target);
      const rps = Number(output.match(/Requests\/sec:\s+([\d.]+)/)[1]);
      const p99 = output.match(/ 99%\s+([\d.]+)(us|ms|s)/);
      const p99ms = Number(p99[1]) * { us: 0.001, ms: 1, s: 1000 }[p99[2]];
      const non2xx = Number(output.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0);
      const per = (ms) => (ms * 1000) / (rps * 8);
      const row = {
        rps,
        p99ms,
        own: per(after.own - before.own),
        helpers: per(after.helpers - before.helpers),
        commands: per(after.commands - before.commands),
        non2xx,
      };
      results.get(target.name).push(row);
      process.stdout.write(
        `round ${round} ${target.name.padEnd(14)} ${rps.toFixed(0).padStart(5)} req/s  p99 ${p99ms.toFixed(1).padStart(6)} ms  CPU µs/req: server ${row.own.toFixed(0)}, helpers ${row.helpers.toFixed(0)}, commands ${row.commands.toFixed(0)}${non2xx ? `  NON-2XX ${non2xx}` : ''}\n`,
      );
    }
  }
} finally {
  for (const target of targets) await target.stop();
  await upstream.stop();
}
const range = (rows, key, digits = 0) => `${Math.min(...rows.map((r) => r[key])).toFixed(digits)}-${Math.max(...rows.map((r) => r[key])).toFixed(digits)}`;
process.stdout.write('\nranges over rounds:\n');
for (const [name, rows] of results) {
  process.stdout.write(
    `${name.padEnd(14)} ${range(rows, 'rps')} req/s, p99 ${range(rows, 'p99ms', 1)} ms, CPU µs/req server ${range(rows, 'own')} + helpers ${range(rows, 'helpers')} (+ commands ${range(rows, 'commands')})\n`,
  );
}
writeFileSync(path.join(dir, 'results.json'), JSON.stringify(Object.fromEntries(results), null, 2));

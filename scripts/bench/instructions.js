// node scripts/bench/instructions.js <status|items|paged|paged-defaults|json|forwarded|exact-path|template-path|tiny|file> [--requests N] [--clients C] [--compare DIR [--baseline-first]] [--baseline SCRIPT] [--env K=V ...]
//   [--credential session|api_key|both]:
// the gateway's CPU instructions per request, counted by valgrind's callgrind (user space: the kernel's
// share, the system calls, is not counted). Unlike requests/s and CPU time, the count hardly moves with
// whatever else the machine does, so two builds (--compare: another checkout, e.g. a worktree of the old
// commit) or two settings (--env) can be compared on a busy 2-core machine. Instrumentation is switched on
// after a warm-up, for N requests sent by 8 keep-alive clients (--clients C). Needs valgrind (Debian's package).
// With --clients 1 every request has an event-loop turn of its own: the count then repeats within ~2%
// (with 8, how many answers share a turn varies with timing, and the count by ±5%): use it to compare builds.
// Printed: all threads' instructions; the main thread's; and the main thread's without V8's optimising
// compiler and garbage collection (the request path's own work: JavaScript, Node, system-call wrappers).
// Even after the warm-up, under valgrind V8 kept optimising (~200k instructions per request, both builds
// alike) and a major GC fell in some runs and not others: compare the last figure.
// --credential: the requests carry the bench user's session token (default), an API key of the same user, or
// each in turn (`both`: a gateway per credential, the key's count also as a ratio to the session's).

import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { envArguments, freePort, startProcess } from './processes.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROUTES = {
  status: { path: '/auth/status' },
  items: { path: '/tk/app/bench/items?q=disk' },
  paged: { path: '/tk/app/bench/items-page?q=disk&status=open&title=item&sort=-id&limit=10&offset=0' },
  'paged-defaults': { path: '/tk/app/bench/items-page?q=disk' },
  json: { path: '/tk/app/bench/json', body: '{"q":"disk"}' },
  forwarded: { path: '/tk/app/bench/forwarded' },
  'exact-path': { path: '/tk/app/bench/hosts/web-1/services/api' },
  'template-path': { path: '/tk/app/bench/hosts/web-2/services/api' },
  tiny: { path: '/tk/app/bench/tiny' },
  file: { path: '/tk/app/bench/file' },
};
const args = process.argv.slice(2);
const scenario = args[0];
if (!(scenario in ROUTES)) {
  process.stderr.write(
    `usage: node scripts/bench/instructions.js <${Object.keys(ROUTES).join('|')}> [--requests N] [--clients C] [--compare DIR] [--env K=V ...]\n`,
  );
  process.exit(2);
}
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const requests = Number(option('--requests') ?? 3000);
const clients = Number(option('--clients') ?? 8);
const credential = option('--credential') ?? 'session';
if (!['session', 'api_key', 'both'].includes(credential)) {
  process.stderr.write('--credential is session, api_key or both\n');
  process.exit(2);
}
const credentials = credential === 'both' ? ['session', 'api_key'] : [credential];
const env = envArguments(args);
// --compare may be given more than once (e.g. the commit before a change, and an older one).
const builds = [path.resolve(here, '../..'), ...args.flatMap((arg, i) => (args[i - 1] === '--compare' ? [path.resolve(arg)] : []))];
// --baseline SCRIPT: a server of scripts/bench/servers (bare-koa.js, bare-koa-proxy.js) counted the same way, after the builds.
const baselines = args.flatMap((arg, i) => (args[i - 1] === '--baseline' ? [arg] : []));
// --baseline-first: the --compare builds are measured first, so that neither build always has the first turn.
if (args.includes('--baseline-first')) builds.reverse();

/** `count` requests over `clients` keep-alive connections; resolves when all are answered (any status but 5xx). */
function load(base, token, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const { path: route, body } = ROUTES[scenario];
  const url = new URL(`${base}${route}`);
  let sent = 0;
  const one = () =>
    new Promise((resolve, reject) => {
      const headers = { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) };
      const req = http.request(url, { method: body ? 'POST' : 'GET', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode >= 500 ? reject(new Error(`answered ${res.statusCode}`)) : resolve()));
      });
      req.on('error', reject);
      req.end(body);
    });
  const client = async () => {
    while (sent < count) {
      sent += 1;
      await one();
    }
  };
  return Promise.all(Array.from({ length: clients }, client)).finally(() => agent.destroy());
}

async function measure(root, credential) {
  // The database is made by the measured checkout's own bench code: an older build refuses a schema with
  // migrations it does not know.
  const { apiKey, login, prepareGateway, writeTinyScript } = await import(pathToFileURL(path.join(root, 'scripts/bench/tkgate.js')).href);
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-instructions-'));
  const upstreamPort = await freePort();
  const upstream = await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], {
    env: { PORT: String(upstreamPort) },
    ready: (line) => line.startsWith('ready'),
  });
  const { config } = await prepareGateway(dir, { upstreamPort, tinyScript: writeTinyScript(dir) });
  const gateway = await startCounted(dir, [path.join(root, 'packages/cli/dist/main.js'), 'start', '--config', config], {
    // In the build's own checkout: the default plugins are resolved from the working directory, and another
    // checkout's plugins may need a newer plugin API than that build's core has.
    env: { TKGATE_LOG_LEVEL: 'info', ...env },
    cwd: root,
    ready: (line) => line.includes('"msg":"listening"'),
  });
  try {
    const base = `http://127.0.0.1:${JSON.parse(gateway.line).port}/api`;
    const session = await login(base);
    const token = credential === 'api_key' ? await apiKey(base, session) : session;
    return await countRequests(gateway, dir, base, token);
  } finally {
    await gateway.stop();
    await upstream.stop();
  }
}

/** A baseline server (scripts/bench/servers/NAME) counted as the gateway is: no auth, the same route and load. */
async function measureBaseline(name) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-instructions-'));
  const upstreamPort = await freePort();
  const upstream = await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], {
    env: { PORT: String(upstreamPort) },
    ready: (line) => line.startsWith('ready'),
  });
  const port = await freePort();
  const server = await startCounted(dir, [path.join(here, 'servers', name)], {
    env: { PORT: String(port), UPSTREAM_PORT: String(upstreamPort), TOKEN: 'baseline' },
    ready: (line) => line.startsWith('ready'),
  });
  try {
    return await countRequests(server, dir, `http://127.0.0.1:${port}/api`, 'baseline');
  } finally {
    await server.stop();
    await upstream.stop();
  }
}

/** node ARGS under callgrind, instrumentation off until countRequests switches it on. */
function startCounted(dir, nodeArgs, { env: processEnv, cwd, ready }) {
  const out = path.join(dir, 'callgrind.out');
  return startProcess(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      // A file per thread: the main thread's count is the request path's; V8's compiler threads add what
      // they still optimise, which under valgrind's slowness lags behind the warm-up and varies run to run.
      '--separate-threads=yes',
      `--callgrind-out-file=${out}.%p`,
      process.execPath,
      // V8 optimises on the main thread, during the warm-up, instead of on a compiler thread that valgrind
      // runs only when the main thread waits: else what is still unoptimised, and the compiler's own work,
      // differ from run to run (measured: ±15% on the same build under load).
      '--no-concurrent-recompilation',
      ...nodeArgs,
    ],
    { env: processEnv, cwd, ready, timeoutMs: 180_000 },
  );
}

/** Warm-up, then `requests` requests counted: instructions per request, all threads, main thread, and its path. */
async function countRequests(gateway, dir, base, token) {
  {
    await load(base, token, 2 * requests); // warm-up: the JIT has compiled what it will, mostly
    execFileSync('callgrind_control', ['--instr=on', String(gateway.pid)], { stdio: 'ignore' });
    await load(base, token, requests);
    execFileSync('callgrind_control', ['--dump', String(gateway.pid)], { stdio: 'ignore' });
    // The dump taken on request (part 1, a file per thread: -01 is the main thread) holds what ran since
    // instrumentation began.
    const dumps = readdirSync(dir).filter((name) => /^callgrind\.out\.\d+\.1-\d+$/.test(name));
    const total = (name) => Number(readFileSync(path.join(dir, name), 'utf8').match(/^(?:summary|totals): (\d+)/m)?.[1] ?? 0);
    const all = dumps.reduce((sum, name) => sum + total(name), 0);
    const mainDump = path.join(
      dir,
      dumps.find((name) => name.endsWith('-01')),
    );
    const main = total(path.basename(mainDump));
    // What the main thread spent in V8's optimising compiler and in garbage collection (inclusive): both
    // come in bursts that fall in or out of the measured requests, so the rest (the request path's own
    // JavaScript, Node and system-call wrappers) is the figure that repeats best.
    const inclusive = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', mainDump], { encoding: 'utf8', maxBuffer: 256 << 20 });
    const spentIn = (pattern) =>
      Math.max(
        0,
        ...inclusive
          .split('\n')
          .filter((line) => pattern.test(line))
          .map((line) => Number(line.trim().split(' ')[0].replaceAll(',', ''))),
      );
    const aside = spentIn(/Compiler::CompileOptimized\(/) + spentIn(/Heap::CollectGarbage\(/);
    return { all: all / requests, main: main / requests, path: (main - aside) / requests };
  }
}

const figure = (count) => Math.round(count).toLocaleString('en');
const countsLine = (count) =>
  `${figure(count.all)} instructions per request (main thread ${figure(count.main)}; without compiler and GC ${figure(count.path)})`;

for (const root of builds) {
  const counts = {};
  for (const kind of credentials) {
    const perRequest = (counts[kind] = await measure(root, kind));
    process.stdout.write(`${scenario} ${root}${Object.keys(env).length ? ` ${JSON.stringify(env)}` : ''} (${kind}): ${countsLine(perRequest)}\n`);
  }
  if (counts.session && counts.api_key)
    process.stdout.write(`${scenario} ${root}: api_key / session = ${(counts.api_key.path / counts.session.path).toFixed(3)}\n`);
}
for (const name of baselines) process.stdout.write(`${scenario} baseline ${name}: ${countsLine(await measureBaseline(name))}\n`);

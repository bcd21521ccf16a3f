// node scripts/bench/instructions.js <status|items|json|tiny|file> [--requests N] [--clients C] [--compare DIR] [--env K=V ...]:
// the gateway's CPU instructions per request, counted by valgrind's callgrind (user space: the kernel's
// share, the system calls, is not counted). Unlike requests/s and CPU time, the count hardly moves with
// whatever else the machine does, so two builds (--compare: another checkout, e.g. a worktree of the old
// commit) or two settings (--env) can be compared on a busy 2-core machine. Instrumentation is switched on
// after a warm-up, for N requests sent by 8 keep-alive clients (--clients C). Needs valgrind (Debian's package).
// With --clients 1 every request has an event-loop turn of its own: the count then repeats within ~2%
// (with 8, how many answers share a turn varies with timing, and the count by ±5%): use it to compare builds.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startProcess } from './processes.js';
import { login, prepareGateway, writeTinyScript } from './tkgate.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROUTES = {
  status: { path: '/auth/status' },
  items: { path: '/tk/app/bench/items?q=disk' },
  json: { path: '/tk/app/bench/json', body: '{"q":"disk"}' },
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
const env = Object.fromEntries(args.flatMap((arg, i) => (args[i - 1] === '--env' ? [arg.split('=')] : [])));
const builds = [path.resolve(here, '../..'), ...(option('--compare') ? [path.resolve(option('--compare'))] : [])];

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

async function measure(root) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-instructions-'));
  const upstreamPort = await freePort();
  const upstream = await startProcess(process.execPath, [path.join(here, 'servers/upstream.js')], {
    env: { PORT: String(upstreamPort) },
    ready: (line) => line.startsWith('ready'),
  });
  const { config } = await prepareGateway(dir, { upstreamPort, tinyScript: writeTinyScript(dir) });
  const out = path.join(dir, 'callgrind.out');
  const gateway = await startProcess(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${out}.%p`,
      process.execPath,
      path.join(root, 'packages/cli/dist/main.js'),
      'start',
      '--config',
      config,
    ],
    { env: { TKGATE_LOG_LEVEL: 'info', ...env }, ready: (line) => line.includes('"msg":"listening"'), timeoutMs: 180_000 },
  );
  try {
    const base = `http://127.0.0.1:${JSON.parse(gateway.line).port}/api`;
    const token = await login(base);
    await load(base, token, 2 * requests); // warm-up: the JIT has compiled what it will, mostly
    execFileSync('callgrind_control', ['--instr=on', String(gateway.pid)], { stdio: 'ignore' });
    await load(base, token, requests);
    execFileSync('callgrind_control', ['--dump', String(gateway.pid)], { stdio: 'ignore' });
    const dumps = readdirSync(dir).filter((name) => name.startsWith('callgrind.out'));
    // The dump taken on request holds what ran since instrumentation began.
    const totals = dumps.map((name) => Number(readFileSync(path.join(dir, name), 'utf8').match(/^(?:summary|totals): (\d+)/m)?.[1] ?? 0));
    return Math.max(...totals) / requests;
  } finally {
    await gateway.stop();
    await upstream.stop();
  }
}

for (const root of builds) {
  const perRequest = await measure(root);
  process.stdout.write(
    `${scenario} ${root}${Object.keys(env).length ? ` ${JSON.stringify(env)}` : ''}: ${Math.round(perRequest).toLocaleString('en')} instructions per request\n`,
  );
}

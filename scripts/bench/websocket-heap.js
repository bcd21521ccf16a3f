// node scripts/bench/websocket-heap.js [--sockets N] [--top K] [--compare DIR]: the JavaScript heap each idle relayed
// WebSocket pair holds, in tkgate and in the bare `ws` relay of scenario 16 (servers/ws-relay.js), read from heap
// snapshots (`--heapsnapshot-signal`) taken with no socket open and with N (default 1,000) open. A snapshot holds
// only what is reachable (V8 collects first), so unlike RSS it does not depend on when the collector ran, nor on the
// machine's load: the figure to compare builds with. Per pair: the heap's growth over N, and the constructors (and
// closures, arrays, strings) whose count or bytes grew, largest first. Native memory (socket buffers) is not in it:
// scenario 16 measures RSS. With --compare DIR, DIR's build is measured too (as a third target).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { websocketConfig } from './websocket-relays.js';
import { closeSockets, openSockets } from './websockets.js';
import { freePort, startProcess } from './processes.js';
import { login, startTkgate } from './tkgate.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const option = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const count = Number(option('--sockets') ?? 1000);
const top = Number(option('--top') ?? 25);
const compareDir = option('--compare');
/** --keep DIR: the snapshots with the sockets open stay there (for the retainers view of Chrome's DevTools). */
const keepDir = option('--keep');
const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-ws-heap-'));
const started = [];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Node flags of a measured process: a snapshot on SIGUSR2, written to its own directory. */
function snapshotFlags(name) {
  const out = path.join(dir, name);
  mkdirSync(out, { recursive: true });
  return { out, flags: ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${out}`] };
}

async function startServer(script, env = {}, flags = []) {
  const port = await freePort();
  const proc = await startProcess(process.execPath, [...flags, path.join(here, 'servers', script)], {
    env: { PORT: String(port), ...env },
    ready: (l) => l.startsWith('ready'),
    timeoutMs: 30_000,
  });
  started.push(proc);
  return { ...proc, port };
}

/** Signals the process and reads the snapshot it writes: live bytes and objects by kind (type and name). */
async function snapshot(pid, out, keepAs) {
  const before = new Set(readdirSync(out));
  process.kill(pid, 'SIGUSR2');
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(250)) {
    const file = readdirSync(out).find((name) => !before.has(name) && name.endsWith('.heapsnapshot'));
    if (!file) continue;
    const full = path.join(out, file);
    const size = statSync(full).size;
    await sleep(500);
    if (statSync(full).size !== size || size === 0) continue;
    let parsed;
    try {
      parsed = JSON.parse(readFileSync(full, 'utf8'));
    } catch {
      continue; // still being written
    }
    if (keepAs) renameSync(full, keepAs);
    else rmSync(full);
    return summarize(parsed);
  }
  throw new Error(`no heap snapshot from ${pid}`);
}

function summarize({ snapshot: { meta }, nodes, strings }) {
  const fields = meta.node_fields;
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const types = meta.node_types[0];
  const kinds = new Map();
  let bytes = 0;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]];
    const size = nodes[i + sizeAt];
    bytes += size;
    // Strings and numbers by type only: their names are their values.
    const key = ['string', 'concatenated string', 'sliced string', 'number', 'hidden', 'code'].includes(type)
      ? `(${type})`
      : `${type} ${strings[nodes[i + nameAt]]}`;
    const kind = kinds.get(key) ?? { count: 0, bytes: 0 };
    kind.count++;
    kind.bytes += size;
    kinds.set(key, kind);
  }
  return { bytes, kinds };
}

/** A target's heap per pair, and its kinds that grew (per pair). */
async function measure(name, target) {
  // A first round opened and closed: the code the handshakes compile (and its feedback) is then in both snapshots.
  await closeSockets(await openSockets(target.url, Math.min(count, 200), target.headers));
  await sleep(1000);
  const empty = await snapshot(target.pid, target.out);
  const sockets = await openSockets(target.url, count, target.headers);
  await sleep(1000);
  const full = await snapshot(target.pid, target.out, keepDir && path.join(keepDir, `${name.replace(/\W+/g, '-')}.heapsnapshot`));
  await closeSockets(sockets);
  const grown = [];
  for (const [key, kind] of full.kinds) {
    const was = empty.kinds.get(key) ?? { count: 0, bytes: 0 };
    const perPair = { key, count: (kind.count - was.count) / count, bytes: (kind.bytes - was.bytes) / count };
    if (perPair.bytes >= 1 || perPair.count >= 0.5) grown.push(perPair);
  }
  grown.sort((a, b) => b.bytes - a.bytes);
  return { name, bytesPerPair: (full.bytes - empty.bytes) / count, grown };
}

async function tkgateTarget(root, name, upstreamPort) {
  const own = await import(pathToFileURL(path.join(root, 'scripts/bench/tkgate.js')).href);
  const work = path.join(dir, `${name}-gateway`);
  mkdirSync(work, { recursive: true });
  const { config } = await own.prepareGateway(work, { upstreamPort, tinyScript: own.writeTinyScript(work) });
  const file = websocketConfig(work, config, upstreamPort, count + 100);
  const { out, flags } = snapshotFlags(name);
  const gateway = await startTkgate(file, flags, {}, path.join(root, 'packages/cli/dist/main.js'));
  started.push(gateway);
  const headers = { authorization: `Bearer ${await login(gateway.base)}` };
  return { pid: gateway.pid, out, headers, url: `${gateway.base.replace(/^http/, 'ws')}/tk/app/dash/live` };
}

async function main() {
  process.stdout.write(
    `websocket heap: ${count} idle pairs per target, load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}\n`,
  );
  const upstream = await startServer('ws-upstream.js');
  const bare = snapshotFlags('bare');
  const relay = await startServer('ws-relay.js', { UPSTREAM_PORT: String(upstream.port) }, bare.flags);
  const targets = [['bare ws relay', { pid: relay.pid, out: bare.out, headers: {}, url: `ws://127.0.0.1:${relay.port}/live` }]];
  targets.push(['tkgate', await tkgateTarget(path.resolve(here, '../..'), 'tkgate', upstream.port)]);
  if (compareDir) targets.push([`tkgate ${compareDir}`, await tkgateTarget(path.resolve(compareDir), 'compare', upstream.port)]);
  const results = [];
  for (const [name, target] of targets) results.push(await measure(name, target));
  const bareBytes = results[0].bytesPerPair;
  for (const { name, bytesPerPair, grown } of results) {
    process.stdout.write(`\n${name}: ${(bytesPerPair / 1024).toFixed(2)} KB of heap per pair (${(bytesPerPair / bareBytes).toFixed(2)}x the bare relay)\n`);
    for (const { key, count: n, bytes } of grown.slice(0, top))
      process.stdout.write(`  ${bytes.toFixed(0).padStart(6)} B  ${n.toFixed(2).padStart(6)}  ${key}\n`);
  }
  process.stdout.write(
    `load average at the end ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}\n`,
  );
}

main()
  .catch((err) => {
    process.stderr.write(`websocket heap failed: ${err.stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const proc of started) await proc.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

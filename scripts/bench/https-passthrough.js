// node scripts/bench/https-passthrough.js [--compare DIR] [--rounds N] [--mb N]: passthrough downloads from an
// https:// upstream through tkgate (since TLS: the gateway's own reader over tls.connect), against the same
// downloads straight from the upstream, and, with --compare, through another checkout's build (before TLS:
// https passthrough went through undici), measured in turns in the same run. Reports MB/s and the gateway's
// peak RSS growth per download. The upstream and the clients run in this process; certificates come from
// openssl, trusted through NODE_EXTRA_CA_CERTS (so the endpoint needs no upstream.tls, which older builds lack).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rssMb, sleep } from './processes.js';
import { login, prepareGateway, startTkgate, writeTinyScript } from './tkgate.js';

const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const rounds = Number(option('--rounds', 3));
const sizeMb = Number(option('--mb', 100));
const compare = option('--compare', undefined);

const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-bench-https-'));
const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=bench CA');
openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'up.key', '-subj', '/CN=127.0.0.1', '-out', 'up.csr');
writeFileSync(path.join(dir, 'up.ext'), 'subjectAltName=IP:127.0.0.1\n');
openssl('x509', '-req', '-in', 'up.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'up.ext', '-out', 'up.crt');

const chunk = Buffer.alloc(64 * 1024, 7);
const total = sizeMb * 1024 * 1024;
const upstream = https.createServer({ cert: readFileSync(path.join(dir, 'up.crt')), key: readFileSync(path.join(dir, 'up.key')) }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
});
await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `https://127.0.0.1:${upstream.address().port}/download`;

const { config } = await prepareGateway(dir, { upstreamPort: 9, tinyScript: writeTinyScript(dir) });
const toolkits = JSON.parse(readFileSync(config, 'utf8')).toolkits.dir;
writeFileSync(
  path.join(toolkits, 'secure.json'),
  JSON.stringify({
    name: 'secure',
    type: 'app',
    endpoints: [{ path: 'download', method: 'GET', type: 'http', upstream: { url: upstreamUrl, passthrough: true } }],
  }),
);
const env = { NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.crt') };
const gateways = [{ name: 'tkgate (this build)', proc: await startTkgate(config, [], env) }];
if (compare) gateways.push({ name: `tkgate (${compare})`, proc: await startTkgate(config, [], env, path.resolve(compare, 'packages/cli/dist/main.js')) });
for (const gateway of gateways) gateway.headers = { authorization: `Bearer ${await login(gateway.proc.base)}` };

/** One download, read as fast as this process can; MB/s and the gateway's peak RSS growth (MB) meanwhile. */
async function download(url, headers, pid) {
  const before = pid ? rssMb(pid) : 0;
  let peak = before;
  const sampler = pid && setInterval(() => (peak = Math.max(peak, rssMb(pid))), 25);
  const started = process.hrtime.bigint();
  const response = await fetch(url, { headers });
  let bytes = 0;
  for await (const part of response.body) bytes += part.length;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (sampler) clearInterval(sampler);
  if (bytes !== total) throw new Error(`${url}: ${bytes} bytes, not ${total}`);
  return { mbPerS: sizeMb / seconds, growthMb: peak - before };
}

const results = new Map();
const record = (name, value) => results.set(name, [...(results.get(name) ?? []), value]);
for (let round = 0; round < rounds; round++) {
  for (const gateway of gateways) record(gateway.name, await download(`${gateway.proc.base}/tk/app/secure/download`, gateway.headers, gateway.proc.pid));
  // The direct row needs the CA too: this process was not started with it, so an agent of its own.
  record('upstream direct', await directDownload());
  await sleep(200);
}

function directDownload() {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    https
      .get(upstreamUrl, { ca: readFileSync(path.join(dir, 'ca.crt')) }, (response) => {
        let bytes = 0;
        response.on('data', (part) => (bytes += part.length));
        response.on('end', () => {
          const seconds = Number(process.hrtime.bigint() - started) / 1e9;
          resolve({ mbPerS: bytes === total ? sizeMb / seconds : NaN, growthMb: 0 });
        });
      })
      .on('error', reject);
  });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const direct = median(results.get('upstream direct').map((r) => r.mbPerS));
console.log(`https passthrough of ${sizeMb} MB, ${rounds} rounds in turns (median MB/s; peak gateway RSS growth per download, MB)`);
for (const [name, runs] of results) {
  const mbPerS = median(runs.map((r) => r.mbPerS));
  const growth = runs.map((r) => r.growthMb.toFixed(1)).join(' / ');
  console.log(`  ${name}: ${mbPerS.toFixed(0)} MB/s (${(mbPerS / direct).toFixed(2)}x direct)${name === 'upstream direct' ? '' : `, RSS growth ${growth}`}`);
}
for (const gateway of gateways) await gateway.proc.stop();
upstream.close();
upstream.closeAllConnections();

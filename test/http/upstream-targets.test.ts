import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { dialects } from '../support/databases.js';
import { call, type Reply } from '../support/http.js';
import { eventually, scrape, valueOf } from '../support/ops.js';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';

/**
 * `upstream.targets` (docs/toolkits.md, "Several targets"): real upstream processes on loopback (targets-upstream.ts), killed, silent,
 * sick and slow, behind a real `tkgate start`. Each target prints every call it hears (its X-Request-Id), so a
 * call sent twice shows even on a target killed since. Not database-specific: the first dialect only. Loads are
 * bounded and nothing is timed: outcomes are asserted, and conditions awaited with generous deadlines.
 */
interface Heard {
  id: string;
  method: string;
  path: string;
}

interface Target {
  name: string;
  port: number;
  heard: Heard[];
  child: ChildProcess;
  url(path: string): string;
  kill(): void;
}

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'targets-upstream.js');
const children: ChildProcess[] = [];

async function startTarget(name: string, mode = 'normal', delayMs = 5, health = 'ok'): Promise<Target> {
  const child = spawn(process.execPath, [script, name, mode, String(delayMs), health], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const heard: Heard[] = [];
  let rest = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', () => reject(new Error(`target ${name} exited`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      rest += chunk.toString('utf8');
      let end;
      while ((end = rest.indexOf('\n')) !== -1) {
        const line = JSON.parse(rest.slice(0, end)) as Heard & { port?: number };
        rest = rest.slice(end + 1);
        if (line.port !== undefined) resolve(line.port);
        else heard.push(line);
      }
    });
  });
  return { name, port, heard, child, url: (at) => `http://127.0.0.1:${port}${at}`, kill: () => child.kill('SIGKILL') };
}

/** A loopback port nothing listens on. */
async function refusedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const [p1, p2, x, y, z, silent, sick, neverCalled] = await Promise.all([
  startTarget('p1'),
  startTarget('p2'),
  startTarget('x'),
  startTarget('y'),
  startTarget('z'),
  startTarget('silent', 'silent'),
  startTarget('sick', 'normal', 5, 'sick'),
  // Sick from the start and never made healthy: its endpoint's probes must leave it out before any call.
  startTarget('never-called', 'normal', 5, 'sick'),
]);
const [dead1, dead2] = [await refusedPort(), await refusedPort()];
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

const endpoint = (at: string, method: string, upstream: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  path: at,
  method,
  type: 'http',
  // Generous: on a loaded 2-core machine a healthy target's answer may take seconds; a retried GET's first attempt gets half.
  upstream: { timeout: '10s', ...upstream },
  ...extra,
});
const health = { path: '/healthz', interval: '300ms', timeout: '1s', healthy: 2, unhealthy: 2 };
const toolkit = {
  name: 'lb',
  type: 'app',
  endpoints: [
    endpoint('get-load', 'GET', { targets: [p1.url('/get-load'), p2.url('/get-load'), x.url('/get-load')] }),
    endpoint('post-load', 'POST', { targets: [p1.url('/post-load'), p2.url('/post-load'), y.url('/post-load')] }),
    endpoint('weights', 'GET', { targets: [p1.url('/w'), { url: p2.url('/w'), weight: 2 }, { url: z.url('/w'), weight: 3 }] }),
    endpoint('idle-get', 'GET', { targets: [silent.url('/idle-get'), p1.url('/idle-get')], timeout: '6s' }),
    endpoint('idle-post', 'POST', { targets: [silent.url('/idle-post'), p1.url('/idle-post')], timeout: '6s' }),
    endpoint('health', 'GET', { targets: [sick.url('/health'), p2.url('/health')], health }),
    endpoint('probed-at-load', 'GET', { targets: [neverCalled.url('/probed'), p2.url('/probed')], health }),
    endpoint('least', 'POST', { targets: [p1.url('/least'), z.url('/least')], balance: 'least_pending', timeout: '10s' }),
    endpoint('down', 'GET', { targets: [`http://127.0.0.1:${dead1}/`, `http://127.0.0.1:${dead2}/`] }),
    endpoint('forwarded/*', 'GET', { targets: [`http://127.0.0.1:${dead1}/f`, p2.url('/f')], forward: 'request' }),
    endpoint('socket', 'GET', { targets: [`ws://127.0.0.1:${dead2}/ws`, `ws://127.0.0.1:${p1.port}/ws`] }, { websocket: true }),
  ],
};

/** Calls `total` times with `concurrency` callers at once; `progress(done)` after each answer. */
async function load(total: number, concurrency: number, send: () => Promise<Reply>, progress: (done: number) => void = () => undefined): Promise<Reply[]> {
  const replies: Reply[] = [];
  let issued = 0;
  const worker = async () => {
    while (issued < total) {
      issued += 1;
      replies.push(await send());
      progress(replies.length);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return replies;
}

const targetLabel = (target: Target, at: string) => target.url(at);

for (const transport of ['undici', 'reader'] as const) {
  const dialect = dialects[0]!;
  describe(`http endpoints: upstream targets (${transport}, ${dialect.name})`, function () {
    this.timeout(180_000);
    const s = withGateway(
      dialect,
      [{ username: 'ops' }],
      { plugin_options: { '@tkgate/plugin-http': { transport } } },
      { toolkitsDir: toolkitDir({ 'lb.yaml': toolkit }), process: true },
    );
    let token: string;
    before(async () => {
      token = await s.login('ops');
    });
    const url = (at: string) => `${s.gateway.base}/tk/app/lb/${at}`;
    const get = (at: string) => call('GET', url(at), { token });
    const post = (at: string, body: unknown = { n: 1 }) => call('POST', url(at), { token, body });
    const downLines = (label: string) => s.gateway.logs.filter((line) => line.msg === 'upstream target down' && line.target === label);

    it('a GET a target never answers goes to another target within the timeout; a POST is not sent again (502 timeout)', async () => {
      const gets = await load(4, 1, () => get('idle-get'));
      expect(gets.map((reply) => reply.status)).to.deep.equal([200, 200, 200, 200]);
      expect(silent.heard.filter((heard) => heard.path === '/idle-get').length, 'the silent target heard GETs').to.be.greaterThan(0);
      const [silentBefore, p1Before] = [silent.heard.length, p1.heard.length];
      const posts = await load(4, 1, () => post('idle-post'));
      const failed = posts.filter((reply) => reply.status !== 200);
      expect(failed.length, 'POSTs that reached the silent target').to.be.greaterThan(0);
      // forward: context answers a timeout 502 upstream_error (forward: request would say 504 upstream_timeout).
      for (const reply of failed) {
        expect(reply.status).to.equal(502);
        expect(reply.body.error.details.reason).to.equal('timeout');
      }
      const silentIds = new Set(
        silent.heard
          .slice(silentBefore)
          .filter((heard) => heard.path === '/idle-post')
          .map((heard) => heard.id),
      );
      expect(silentIds.size).to.equal(failed.length);
      for (const heard of p1.heard.slice(p1Before).filter((each) => each.path === '/idle-post'))
        expect(silentIds.has(heard.id), 'a POST sent twice').to.equal(false);
    });

    it('every target down: 502 no_healthy_target at once, once each target is left out', async () => {
      const first = await get('down');
      expect(first.status).to.equal(502);
      expect(first.body.error.code).to.equal('upstream_error');
      const reason = await eventually(
        'no_healthy_target',
        async () => {
          const reply = await get('down');
          expect(reply.status).to.equal(502);
          return reply.body.error.details.reason === 'no_healthy_target' ? reply.body.error.details.reason : undefined;
        },
        30_000,
      );
      expect(reason).to.equal('no_healthy_target');
    });

    it('forward: request and WebSockets go to a target that takes the call', async () => {
      const before = p2.heard.length;
      for (let i = 0; i < 4; i++) {
        const reply = await get('forwarded/a/b?q=1');
        expect(reply.status).to.equal(200);
        expect(reply.body).to.deep.equal({ target: 'p2' });
      }
      expect(p2.heard.slice(before).filter((heard) => heard.path === '/f/a/b?q=1').length).to.equal(4);
      for (let i = 0; i < 3; i++) {
        const socket = new WebSocket(url('socket').replace(/^http/, 'ws'), { headers: { authorization: `Bearer ${token}` } });
        const echoed = await new Promise<string>((resolve, reject) => {
          socket.once('open', () => socket.send('hello'));
          socket.once('message', (data) => resolve(String(data)));
          socket.once('error', reject);
          socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
        });
        expect(echoed).to.equal('p1:hello');
        socket.close();
      }
    });

    if (transport !== 'undici') return;

    it('kill one of three targets under a steady load of GETs: no call lost; the target is out, logged once', async () => {
      const replies = await load(
        300,
        4,
        () => get('get-load'),
        (done) => done === 60 && x.kill(),
      );
      expect(replies.filter((reply) => reply.status !== 200).map((reply) => reply.body)).to.deep.equal([]);
      const label = targetLabel(x, '/get-load');
      await eventually('target down logged', () => (downLines(label).length > 0 ? true : undefined));
      expect(downLines(label).length, 'one line per change').to.equal(1);
      const { samples } = await scrape(s.gateway);
      expect(valueOf(samples, 'tkgate_upstream_target_up', { toolkit: 'lb', endpoint: 'get-load', target: label })).to.equal(0);
      expect(valueOf(samples, 'tkgate_upstream_target_up', { toolkit: 'lb', endpoint: 'get-load', target: targetLabel(p1, '/get-load') })).to.equal(1);
      expect(valueOf(samples, 'tkgate_upstream_requests_total', { toolkit: 'lb', endpoint: 'get-load', target: label, outcome: 'not_sent' })).to.be.greaterThan(
        0,
      );
    });

    it('kill one of three targets under a steady load of POSTs: only calls in flight on it fail, none is sent twice', async () => {
      const concurrency = 4;
      const replies = await load(
        300,
        concurrency,
        () => post('post-load'),
        (done) => done === 60 && y.kill(),
      );
      const failed = replies.filter((reply) => reply.status !== 200);
      expect(failed.length, 'failed POSTs').to.be.at.most(concurrency);
      for (const reply of failed) expect(reply.body.error.code).to.be.oneOf(['upstream_error', 'upstream_timeout']);
      const ids = [p1, p2, y].flatMap((target) => target.heard.filter((heard) => heard.path === '/post-load').map((heard) => heard.id));
      expect(ids.length, 'no POST heard twice').to.equal(new Set(ids).size);
      expect(ids.length).to.be.at.least(300 - failed.length);
    });

    it("probes the targets from the toolkit's load: a sick target is out before the first call, which it never hears", async () => {
      const label = targetLabel(neverCalled, '/probed');
      // No call yet: only the probes that started with the endpoint's version can have left it out.
      await eventually(
        'the sick target out by its probes',
        async () =>
          (await scrape(s.gateway)).samples.find(
            (sample) => sample.name === 'tkgate_upstream_target_up' && sample.labels.endpoint === 'probed-at-load' && sample.labels.target === label,
          )?.value === 0 || undefined,
        30_000,
      );
      for (let i = 0; i < 4; i++) expect((await get('probed-at-load')).body.data).to.deep.equal({ target: 'p2' });
      expect(neverCalled.heard.filter((heard) => heard.path === '/probed')).to.deep.equal([]);
    });

    it('a target whose health check answers 503 is out, and back once it answers 200', async () => {
      const label = targetLabel(sick, '/health');
      expect((await get('health')).status).to.equal(200);
      await eventually('the sick target out', () => (downLines(label).length > 0 ? true : undefined), 30_000);
      for (let i = 0; i < 6; i++) expect((await get('health')).body.data).to.deep.equal({ target: 'p2' });
      await fetch(sick.url('/control/healthy'), { method: 'POST' });
      await eventually('the target back', () => s.gateway.logs.find((line) => line.msg === 'upstream target up' && line.target === label), 30_000);
      await eventually('a call reaches it', async () => ((await get('health')).body.data?.target === 'sick' ? true : undefined), 30_000);
      const { samples } = await scrape(s.gateway);
      expect(valueOf(samples, 'tkgate_upstream_target_up', { toolkit: 'lb', endpoint: 'health', target: label })).to.equal(1);
      expect(downLines(label).length).to.equal(1);
    });

    it('weights over 1,000 calls: each target gets its share', async () => {
      const replies = await load(1000, 8, () => get('weights'));
      const counts: Record<string, number> = {};
      for (const reply of replies) counts[reply.body.data.target] = (counts[reply.body.data.target] ?? 0) + 1;
      expect(counts.p1! + counts.p2! + counts.z!).to.equal(1000);
      // Shares 1/6, 2/6, 3/6, within 3 percentage points.
      expect(counts.p1! / 1000).to.be.closeTo(1 / 6, 0.03);
      expect(counts.p2! / 1000).to.be.closeTo(2 / 6, 0.03);
      expect(counts.z! / 1000).to.be.closeTo(3 / 6, 0.03);
    });

    it('least_pending: while one target holds a call, the idle one gets the next calls', async () => {
      const held = post('least', { hold: true });
      const holder = await eventually('the held call heard', () => [p1, z].find((target) => target.heard.some((heard) => heard.path === '/least')));
      const idle = holder === p1 ? z : p1;
      for (let i = 0; i < 6; i++) expect((await post('least')).body.data).to.deep.equal({ target: idle.name });
      expect((await held).body.data).to.deep.equal({ target: holder.name });
    });
  });
}

describe('http endpoints: upstream targets, config check', () => {
  const s = withDatabase(dialects[0]!, []);
  it('refuses url with targets, neither, a weight that is not a positive integer, and the wrong scheme, naming each key', async () => {
    const config = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions });
    const dir = toolkitDir({
      'targets.yaml': [
        'name: targets',
        'type: app',
        'endpoints:',
        '  - { path: a, method: GET, type: http, upstream: { url: "http://127.0.0.1:9/a", targets: ["http://127.0.0.1:9/a"] } }',
        '  - { path: b, method: GET, type: http, upstream: { timeout: 1s } }',
        '  - { path: c, method: GET, type: http, upstream: { targets: ["http://127.0.0.1:9/c", { url: "http://127.0.0.1:8/c", weight: 0 }] } }',
        '  - { path: d, method: GET, type: http, websocket: true, upstream: { targets: ["ws://127.0.0.1:9/d", "http://127.0.0.1:8/d"] } }',
        '  - { path: e, method: GET, type: http, upstream: { targets: ["ws://127.0.0.1:9/e"] } }',
        '  - { path: f, method: GET, type: http, upstream: { targets: ["http://127.0.0.1:9/f", { url: "http://127.0.0.1:8/f", weight: 2 }], balance: least_pending, retries: 2, passive: { failures: 2, eject_for: 5s }, health: { path: /healthz } } }',
        '',
      ].join('\n'),
    });
    const result = await runCli(['config', 'check', dir, '--config', config]);
    expect(result.code, result.stderr).to.equal(1);
    const lines = result.stdout.trim().split('\n');
    const keys = lines.map((line) => /: (endpoints\.[\w.]+) /.exec(line)?.[1]);
    expect(keys, result.stdout).to.include.members([
      'endpoints.0.upstream.targets',
      'endpoints.1.upstream.url',
      'endpoints.2.upstream.targets.1.weight',
      'endpoints.3.upstream.targets.1',
      'endpoints.4.upstream.targets.0',
    ]);
    expect(lines.join('\n')).to.not.include('endpoints.5');
  });
});

describe(`http endpoints: upstream targets with server.workers: 2 (${dialects[0]!.name})`, function () {
  this.timeout(120_000);
  const s = withGateway(
    dialects[0]!,
    [{ username: 'ops' }],
    { server: { workers: 2 } },
    { toolkitsDir: toolkitDir({ 'lb.yaml': { name: 'lb', type: 'app', endpoints: [toolkit.endpoints.find((each) => each.path === 'down')!] } }) },
  );
  it("counts each worker's calls in one scrape, and shows a target out when a worker has it out", async () => {
    const token = await s.login('ops');
    const label = `http://127.0.0.1:${dead1}/`;
    const samples = await eventually(
      'the target out in the scrape',
      async () => {
        expect((await call('GET', `${s.gateway.base}/tk/app/lb/down`, { token })).status).to.equal(502);
        const scraped = (await scrape(s.gateway)).samples;
        return valueOf(scraped, 'tkgate_upstream_requests_total', { endpoint: 'down', target: label, outcome: 'not_sent' }) >= 3 &&
          scraped.some((sample) => sample.name === 'tkgate_upstream_target_up' && sample.labels.target === label && sample.value === 0)
          ? scraped
          : undefined;
      },
      60_000,
    );
    expect(valueOf(samples, 'tkgate_upstream_target_up', { toolkit: 'lb', endpoint: 'down', target: label })).to.equal(0);
  });
});

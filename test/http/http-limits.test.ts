import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { sleep } from '../support/fixtures.js';
import { toolkitClient, type Reply } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/** 9 MB of JSON, sent chunked (no Content-Length), so the gateway cannot refuse it before reading. */
const NINE_MB_JSON = Buffer.from(JSON.stringify({ blob: 'x'.repeat(9 * 1024 * 1024) }));
let releaseHeld: () => void = () => undefined;
const held = new Promise<void>((resolve) => (releaseHeld = resolve));
let heldCount = 0;

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.on('error', () => undefined);
    if (req.url === '/nine-mb') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(NINE_MB_JSON);
    }
    heldCount++;
    void held.then(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"held":true}');
    });
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
after(() => {
  releaseHeld();
  server.closeAllConnections();
  server.close();
});

const limits = {
  name: 'limits',
  type: 'app',
  endpoints: [
    // Every limit at its default: max_response_bytes 1 MiB, max_concurrency 64, max_queue 1024.
    { path: 'nine-mb', method: 'GET', type: 'http', upstream: { url: `${upstreamUrl}/nine-mb`, timeout: '30s' } },
    { path: 'held', method: 'GET', type: 'http', upstream: { url: `${upstreamUrl}/held`, timeout: '30s' }, max_concurrency: 2, max_queue: 3 },
  ],
};

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

// The limits are the plugin's own, not the database's: one dialect is enough.
describe(`http endpoint limits (${dialects[0]!.name})`, () => {
  const s = withGateway(dialects[0]!, [{ username: 'xavi', power: 7 }], {}, { toolkitsDir: toolkitDir({ 'limits.yaml': limits }), process: true });

  it('answers 503 busy with Retry-After past max_concurrency + max_queue, and serves the admitted ones', async () => {
    const c = toolkitClient(s.gateway.base, await s.login('xavi'));
    const replies: Reply[] = [];
    const all = Promise.all(Array.from({ length: 20 }, () => c.get('limits', 'held').then((reply) => replies.push(reply))));
    // 2 run and 3 wait while the upstream holds its answers: the other 15 are turned away at once.
    for (let i = 0; i < 400 && replies.length < 15; i++) await sleep(25);
    expect(replies.map((reply) => reply.status)).to.deep.equal(Array(15).fill(503));
    expect(heldCount).to.equal(2);
    for (const reply of replies) {
      expect(reply.body.error.code).to.equal('busy');
      expect(reply.headers.get('retry-after')).to.equal('1');
    }
    releaseHeld();
    await all;
    expect(replies.slice(15).map((reply) => [reply.status, reply.body.data])).to.deep.equal(Array(5).fill([200, { held: true }]));
  });

  it('stays under 300 MB RSS for 300 concurrent 9 MB JSON answers, each refused past max_response_bytes', async () => {
    const token = await s.login('xavi');
    const pid = s.gateway.child.pid!;
    const controller = new AbortController();
    let peak = rssMb(pid);
    if (process.env.TKGATE_TEST_VERBOSE) console.log('RSS MB before', peak);
    let running = true;
    const sampler = (async () => {
      while (running) {
        peak = Math.max(peak, rssMb(pid));
        // Past the bound the test has failed: stop the load rather than push a shared machine to its limit.
        if (peak > 300) controller.abort();
        await sleep(20);
      }
    })();
    const url = `${s.gateway.base}/tk/app/limits/nine-mb`;
    const statuses = await Promise.all(
      Array.from({ length: 300 }, async () => {
        try {
          const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
          const body = (await response.json()) as { error?: { details?: unknown } };
          return `${response.status} ${JSON.stringify(body.error?.details)}`;
        } catch {
          return 'aborted';
        }
      }),
    );
    running = false;
    await sampler;
    if (process.env.TKGATE_TEST_VERBOSE) console.log('peak RSS MB', peak);
    expect(peak, 'peak gateway RSS in MB').to.be.below(300);
    expect(new Set(statuses)).to.deep.equal(new Set(['502 {"reason":"too_large","upstream_status":200}']));
  });
});

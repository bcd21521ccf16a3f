import { createHash } from 'node:crypto';
import net from 'node:net';
import { expect } from 'chai';
import { sleep } from '../support/fixtures.js';
import { toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { startUpstream, type Upstream } from '../support/upstream.js';
import { runConfig, transportRuns } from './transport-runs.js';
import { downloadPeakGrowth } from '../support/process-memory.js';

const upstream: Upstream = await startUpstream();
after(() => upstream.close());

const route = (path: string, url: string, extra: Record<string, unknown> = {}) => ({
  path,
  method: ['GET', 'POST'],
  type: 'http',
  upstream: { url, timeout: '1s', ...extra },
});

const proxy = {
  name: 'proxy',
  type: 'app',
  endpoints: [
    {
      ...route('json', `${upstream.url}/json`, { headers: { 'X-Api-Key': 'configured-key' } }),
      inject_db_context: ['users.username as login'],
      overwrite_wrapping: ['-power'],
    },
    route('empty', `${upstream.url}/empty`),
    route('large-json', `${upstream.url}/large-json`, { max_response_bytes: 10 * 1024 * 1024 }),
    route('status-404', `${upstream.url}/status/404`),
    route('status-500', `${upstream.url}/status/500`),
    route('text', `${upstream.url}/text`),
    route('big-json', `${upstream.url}/big-json`, { max_response_bytes: 1000 }),
    route('slow', `${upstream.url}/slow`),
    route('reset', `${upstream.url}/reset-mid-body`),
    route('refused', 'http://127.0.0.1:9/nothing-listens'),
    route('dns', 'http://tkgate-test.invalid/'),
    route('file', `${upstream.url}/file`, { passthrough: true }),
    route('100mb', `${upstream.url}/100mb`, { passthrough: true }),
    route('300mb', `${upstream.url}/300mb`, { passthrough: true }),
    route('chunked', `${upstream.url}/chunked`, { passthrough: true }),
    route('close-delimited', `${upstream.url}/close-delimited`, { passthrough: true }),
    route('reset-download', `${upstream.url}/reset-mid-download`, { passthrough: true }),
    route('file-status', `${upstream.url}/status/503`, { passthrough: true }),
    route('endless', `${upstream.url}/endless`, { passthrough: true, timeout: '5s' }),
  ],
};

for (const run of transportRuns) {
  describe(`http endpoints (${run.dialect.name}, ${run.name})`, () => {
    const s = withGateway(run.dialect, [{ username: 'xavi', power: 7 }], runConfig(run), {
      toolkitsDir: toolkitDir({ 'proxy.yaml': proxy }),
      process: true, // the gateway's pid, exit code and output
    });
    const client = async () => toolkitClient(s.gateway.base, await s.login('xavi'));

    it('POSTs the request context as JSON and wraps a 2xx JSON answer in the envelope', async () => {
      const c = await client();
      const reply = await c.post('proxy', 'json', { q: 'disk' });
      expect(reply.status).to.equal(200);
      expect(reply.body.data).to.deep.equal({ answered: true });
      const seen = upstream.requests.at(-1)!;
      expect(seen.headers['content-type']).to.equal('application/json');
      expect(JSON.parse(seen.body)).to.deep.equal({
        user_id: s.ids.xavi,
        username: 'xavi',
        core_group_id: null,
        core_group_name: null,
        toolkit_group: null,
        request_id: reply.headers.get('x-request-id'),
        payload: { q: 'disk' },
        db_context: { login: 'xavi' },
      });
      expect((await c.get('proxy', 'empty')).body.data).to.equal(null);
    });

    it('forwards X-Request-Id and the configured headers, never the client Authorization or cookies', async () => {
      const token = await s.login('xavi');
      const reply = await toolkitClient(s.gateway.base, token).get(
        'proxy',
        'json',
        {},
        {
          headers: { cookie: 'session=client-secret', 'x-custom': 'from-client', 'proxy-authorization': 'Basic abc' },
        },
      );
      expect(reply.status).to.equal(200);
      const headers = upstream.requests.at(-1)!.headers;
      expect(headers['x-request-id']).to.equal(reply.headers.get('x-request-id'));
      expect(headers['x-api-key']).to.equal('configured-key');
      expect(headers).not.to.have.any.keys('authorization', 'cookie', 'proxy-authorization', 'x-custom');
      expect(JSON.stringify(headers)).not.to.include(token);
      expect(upstream.requests.at(-1)!.body).not.to.include(token);
    });

    it('answers 502 upstream_error with the upstream status for a non-2xx answer, leaking none of its body', async () => {
      const c = await client();
      for (const [path, status] of [
        ['status-404', 404],
        ['status-500', 500],
      ] as const) {
        const reply = await c.get('proxy', path);
        expect(reply.status).to.equal(502);
        expect(reply.body.error.code).to.equal('upstream_error');
        expect(reply.body.error.details).to.deep.equal({ reason: 'status', upstream_status: status });
        expect(JSON.stringify(reply.body)).not.to.include('upstream-internal-detail');
      }
    });

    const failures: Array<[string, Record<string, unknown>]> = [
      ['text', { reason: 'invalid_json', upstream_status: 200 }],
      ['big-json', { reason: 'too_large', upstream_status: 200 }],
      ['slow', { reason: 'timeout' }],
      ['reset', { reason: 'connection', upstream_status: 200 }],
      ['refused', { reason: 'connection' }],
      ['dns', { reason: 'connection' }],
    ];
    for (const [path, details] of failures) {
      it(`answers 502 upstream_error for ${path}, with the cause in the log`, async () => {
        const reply = await (await client()).get('proxy', path);
        expect(reply.status).to.equal(502);
        expect(reply.body.error.code).to.equal('upstream_error');
        expect(reply.body.error.details).to.deep.equal(details);
        await sleep(20);
        const logged = s.gateway.logs.find((record) => record.request_id === reply.body.request_id && record.msg === 'request failed');
        expect(logged?.err).to.be.an('object');
      });
    }

    it('passes a multi-MB binary file through byte for byte, with its type, length and disposition, and no envelope', async () => {
      const token = await s.login('xavi');
      const response = await fetch(`${s.gateway.base}/tk/app/proxy/file`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.equal('application/octet-stream');
      expect(response.headers.get('content-length')).to.equal(String(upstream.file.bytes.length));
      expect(response.headers.get('content-disposition')).to.equal('attachment; filename="dump.bin"');
      expect(response.headers.get('x-upstream-secret')).to.equal(null);
      expect(response.headers.get('x-request-id')).to.be.a('string');
      const body = Buffer.from(await response.arrayBuffer());
      expect(createHash('sha256').update(body).digest('hex')).to.equal(upstream.file.sha256);
      const failed = await (await client()).get('proxy', 'file-status');
      expect(failed.status).to.equal(502);
      expect(failed.body.error.details).to.deep.equal({ reason: 'status', upstream_status: 503 });
    });

    it('passes concurrent downloads through byte for byte while some clients read slowly (shared read buffers)', async () => {
      const token = await s.login('xavi');
      /** One download of /file (random bytes): a slow one pauses after each read, so its buffers stay out a while. */
      const download = async (path: string, slow: boolean) => {
        const response = await fetch(`${s.gateway.base}/tk/app/proxy/${path}`, { headers: { authorization: `Bearer ${token}` } });
        expect(response.status).to.equal(200);
        const hash = createHash('sha256');
        const reader = response.body!.getReader();
        let bytes = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          bytes += value.length;
          hash.update(value);
          if (slow) await sleep(2);
        }
        return { bytes, sha256: hash.digest('hex') };
      };
      const runs = await Promise.all(Array.from({ length: 12 }, (_, index) => download(index % 3 === 0 ? 'chunked' : 'file', index % 2 === 0)));
      for (const run of runs) expect(run).to.deep.equal({ bytes: upstream.file.bytes.length, sha256: upstream.file.sha256 });
    });

    it('passes chunked and close-delimited bodies through byte for byte', async () => {
      const token = await s.login('xavi');
      const fetchBytes = async (path: string) => {
        const response = await fetch(`${s.gateway.base}/tk/app/proxy/${path}`, { headers: { authorization: `Bearer ${token}` } });
        expect(response.status).to.equal(200);
        return Buffer.from(await response.arrayBuffer());
      };
      const chunked = await fetchBytes('chunked');
      expect(chunked.length).to.equal(upstream.file.bytes.length);
      expect(createHash('sha256').update(chunked).digest('hex')).to.equal(upstream.file.sha256);
      const closeDelimited = await fetchBytes('close-delimited');
      expect(closeDelimited.equals(upstream.file.bytes.subarray(0, 1_000_000))).to.equal(true);
    });

    it('cuts the client connection when the upstream resets mid-download', async () => {
      const token = await s.login('xavi');
      const response = await fetch(`${s.gateway.base}/tk/app/proxy/reset-download`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).to.equal(200);
      const outcome = await response.arrayBuffer().then(
        (body) => `complete ${body.byteLength}`,
        () => 'cut',
      );
      expect(outcome).to.equal('cut');
      expect((await (await client()).get('proxy', 'json')).status).to.equal(200);
    });

    it('streams passthrough downloads: gateway memory does not grow with their size', async () => {
      const token = await s.login('xavi');
      const pid = s.gateway.child.pid!;
      /** Downloads through the gateway as fast as loopback allows; returns the gateway's RSS growth at its peak. */
      const download = (path: string, size: number) => downloadPeakGrowth(`${s.gateway.base}/tk/app/proxy/${path}`, token, pid, size);
      // One small download first: compiling the download path is not what this measures.
      await (await fetch(`${s.gateway.base}/tk/app/proxy/file`, { headers: { authorization: `Bearer ${token}` } })).arrayBuffer();
      const growth100 = await download('100mb', 100 * 1024 * 1024);
      const growth300 = await download('300mb', 300 * 1024 * 1024);
      if (process.env.TKGATE_TEST_VERBOSE) console.log(`RSS growth: 100 MB download +${growth100.toFixed(1)} MB, 300 MB download +${growth300.toFixed(1)} MB`);
      // Two reused read buffers per upstream connection: a few MB at most, flat in the size. Buffering whole would
      // cost the body's size, and a fresh Buffer per socket read was seen at +47 MB (100 MB) and +68 MB (300 MB)
      // before GC caught up. Seen here with the keep-alive reader: +0.2 to +2.6 MB for 300 MB, +0.3 to +7.5 MB for
      // 100 MB (the most when this test ran alone on a fresh gateway, before the small download came first);
      // 16 MB leaves room for the unrelated heap growth GC timing adds on a shared 2-core machine.
      // Only the reader bounds it so (docs/toolkits.md): undici's stream, which http_passthrough "transport"
      // uses, was seen at +35 MB; its downloads are checked whole and of announced length all the same.
      if (run.passthrough !== 'reader') return;
      expect(growth100).to.be.below(16);
      expect(growth300).to.be.below(16);
    });

    it('a client that stops reading mid-download gets every byte once it reads on, and its connection serves the next request', async () => {
      const token = await s.login('xavi');
      const { port, pathname } = new URL(`${s.gateway.base}/tk/app/proxy/100mb`);
      const socket = net.connect(Number(port), '127.0.0.1');
      const request = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;
      const sevens = Buffer.alloc(1024 * 1024, 7);
      /** Reads one response of the socket: its head and body (counted; every byte checked against `expected` if given). */
      const response = (expected?: Buffer) =>
        new Promise<{ head: string; bytes: number; wrong: number; body: string }>((resolve, reject) => {
          let head: string | undefined;
          let pending = Buffer.alloc(0);
          let length = 0;
          let bytes = 0;
          let wrong = 0;
          let body = '';
          let paused = false;
          const onData = (data: Buffer) => {
            if (head === undefined) {
              pending = Buffer.concat([pending, data]);
              const end = pending.indexOf('\r\n\r\n');
              if (end < 0) return;
              head = pending.subarray(0, end).toString('latin1');
              length = Number(/\r\ncontent-length: (\d+)/i.exec(head)![1]);
              data = pending.subarray(end + 4);
            }
            bytes += data.length;
            if (expected) {
              // Socket reads are 64 KiB at most.
              if (!data.equals(expected.subarray(0, data.length))) wrong++;
            } else body += data.toString('latin1');
            if (expected && !paused && bytes > 1024 * 1024) {
              // The client stops reading for a while: the gateway's writes stop flowing, its reads wait.
              paused = true;
              socket.pause();
              setTimeout(() => socket.resume(), 500);
            }
            if (bytes >= length) {
              socket.off('data', onData).off('error', reject);
              resolve({ head, bytes, wrong, body });
            }
          };
          socket.on('data', onData).on('error', reject);
        });
      socket.write(request(pathname));
      const download = await response(sevens);
      expect(download.head).to.match(/^HTTP\/1\.1 200 /);
      expect(download.bytes).to.equal(100 * 1024 * 1024);
      expect(download.wrong).to.equal(0);
      socket.write(request(new URL(`${s.gateway.base}/tk/app/proxy/json`).pathname));
      const next = await response();
      socket.destroy();
      expect(next.head).to.match(/^HTTP\/1\.1 200 /);
      expect(JSON.parse(next.body)).to.include({ success: true });
    });

    it('closes the upstream connection when the client leaves mid-download of a body of known length, with an info line', async () => {
      const token = await s.login('xavi');
      const controller = new AbortController();
      const response = await fetch(`${s.gateway.base}/tk/app/proxy/300mb`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
      expect(response.headers.get('content-length')).to.equal(String(300 * 1024 * 1024));
      await response.body!.getReader().read();
      controller.abort();
      for (let i = 0; i < 40 && !upstream.abandoned.includes('/300mb'); i++) await sleep(50);
      expect(upstream.abandoned).to.include('/300mb');
      const requestId = response.headers.get('x-request-id');
      const ofRequest = () => s.gateway.logs.filter((record) => record.request_id === requestId);
      for (let i = 0; i < 40 && !ofRequest().some((record) => record.msg === 'client left during a streamed response'); i++) await sleep(50);
      expect(ofRequest().map((record) => [record.level, record.msg])).to.deep.include(['info', 'client left during a streamed response']);
      expect(ofRequest().filter((record) => record.level === 'error' || record.err !== undefined)).to.deep.equal([]);
      expect((await (await client()).get('proxy', 'json')).status).to.equal(200);
    });

    it('survives clients that disconnect at any moment of a proxied request', async () => {
      const token = await s.login('xavi');
      const { request: httpRequest, Agent } = await import('node:http');
      // Like a load generator ending its run: 50 keep-alive connections busy, then all cut at once.
      const agent = new Agent({ keepAlive: true, maxSockets: 50 });
      let running = true;
      const loop = async (i: number) => {
        while (running) {
          await new Promise<void>((resolve) => {
            const request = httpRequest(
              `${s.gateway.base}/tk/app/proxy/${['json', 'file', 'big-json'][i % 3]}`,
              { agent, method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
              (response) => {
                response.resume();
                response.on('end', resolve).on('error', () => resolve());
              },
            );
            request.on('error', () => resolve());
            request.end('{}');
          });
        }
      };
      const loops = Array.from({ length: 50 }, (_, i) => loop(i));
      await sleep(1500);
      running = false;
      agent.destroy();
      await Promise.all(loops);
      await sleep(300);
      expect(s.gateway.child.exitCode, s.gateway.output().slice(-1500)).to.equal(null);
      expect((await (await client()).get('proxy', 'json')).status).to.equal(200);
    });

    it('survives a client that leaves while a large JSON answer is being written to it', async () => {
      const token = await s.login('xavi');
      for (let i = 0; i < 3; i++) {
        const controller = new AbortController();
        const response = await fetch(`${s.gateway.base}/tk/app/proxy/large-json`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
        expect(response.status).to.equal(200);
        // Headers are in, 8 MB of body are not: the gateway is still writing when the client goes.
        controller.abort();
        await sleep(200);
        expect(s.gateway.child.exitCode, s.gateway.output().slice(-2000)).to.equal(null);
      }
      expect((await (await client()).get('proxy', 'json')).status).to.equal(200);
    });

    it('aborts the upstream request when the client goes away', async () => {
      const token = await s.login('xavi');
      const controller = new AbortController();
      const response = await fetch(`${s.gateway.base}/tk/app/proxy/endless`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
      expect(response.status).to.equal(200);
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      for (let i = 0; i < 40 && !upstream.abandoned.includes('/endless'); i++) await sleep(50);
      expect(upstream.abandoned).to.include('/endless');
      // A client leaving mid-stream is an info line, not an error with a stack.
      const requestId = response.headers.get('x-request-id');
      const ofRequest = () => s.gateway.logs.filter((record) => record.request_id === requestId);
      for (let i = 0; i < 40 && !ofRequest().some((record) => record.msg === 'client left during a streamed response'); i++) await sleep(50);
      expect(ofRequest().map((record) => [record.level, record.msg])).to.deep.include(['info', 'client left during a streamed response']);
      expect(ofRequest().filter((record) => record.level === 'error' || record.err !== undefined)).to.deep.equal([]);
      const abandonedSlow = upstream.abandoned.filter((url) => url === '/slow').length;
      const slowController = new AbortController();
      const slow = fetch(`${s.gateway.base}/tk/app/proxy/slow`, { headers: { authorization: `Bearer ${token}` }, signal: slowController.signal }).catch(
        () => 'aborted',
      );
      await sleep(200);
      slowController.abort();
      expect(await slow).to.equal('aborted');
      for (let i = 0; i < 40 && upstream.abandoned.filter((url) => url === '/slow').length === abandonedSlow; i++) await sleep(50);
      expect(upstream.abandoned.filter((url) => url === '/slow').length).to.equal(abandonedSlow + 1);
    });
  });
}

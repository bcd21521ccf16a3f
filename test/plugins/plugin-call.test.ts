import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir, type ToolkitDoc } from '../support/toolkit-files.js';
import { pluginWithNestedCore } from './fixtures/nested-core.js';

const probePlugin = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/probe-plugin.js');

const probe = (action: string, method: string | string[] = 'GET') => ({ path: action, method, type: 'probe', action });
const nested = (answer: string) => ({ path: answer, method: 'GET', type: 'nested', answer });
const probes: ToolkitDoc = {
  name: 'probes',
  type: 'app',
  endpoints: [
    probe('created', 'POST'),
    probe('nothing'),
    probe('whoami', ['GET', 'POST']),
    probe('foreign'),
    probe('conflict'),
    probe('bad_status'),
    probe('bad_reply'),
    probe('undeclared'),
    probe('body_exact'),
    probe('body_overlong'),
  ],
};
const nestedToolkit: ToolkitDoc = { name: 'nested', type: 'app', endpoints: ['conflict', 'unavailable', 'created', 'stream', 'where'].map(nested) };

for (const dialect of dialects) {
  describe(`the plugin call: reply, method, client address, loggers, errors (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'ann' }]);
    let gateway: GatewayProcess;
    let client: ReturnType<typeof toolkitClient>;
    let nestedCoreDir: string;
    let removeNestedCore = () => undefined as void;
    const logsOf = (filter: (record: Record<string, unknown>) => boolean) => gateway.logs.filter(filter);

    before(async () => {
      const nestedPlugin = pluginWithNestedCore();
      nestedCoreDir = nestedPlugin.coreDir;
      removeNestedCore = nestedPlugin.remove;
      gateway = await startGateway({
        config: {
          db: s.bed.dbConfig,
          server: { port: 0, trust_proxy: true },
          log: { level: 'debug' },
          plugins: ['@tkgate/plugin-internal', probePlugin, nestedPlugin.pluginFile],
          toolkits: { dir: toolkitDir({ 'probes.yaml': probes, 'nested.yaml': nestedToolkit }), watch: false },
        },
      });
      client = toolkitClient(gateway.base, await loginToken(gateway.base, 'ann', passwordOf('ann')));
    });
    after(async () => {
      await gateway?.stop();
      removeNestedCore();
    });

    it('answers reply(data, { status, headers }) in the envelope with that status and those headers', async () => {
      const answer = await client.post('probes', 'created', {});
      expect(answer.status).to.equal(201);
      expect(answer.headers.get('location')).to.equal('/things/7');
      expect(answer.headers.get('x-probe')).to.equal('yes');
      expect(answer.body).to.include({ success: true, endpoint: '/api/tk/app/probes/created' });
      expect(answer.body.data).to.deep.equal({ made: true });
    });

    it('answers undefined as data: null', async () => {
      const answer = await client.get('probes', 'nothing');
      expect(answer.status).to.equal(200);
      expect(answer.body).to.have.property('data', null);
    });

    it('gives the method and the client address (last X-Forwarded-For entry with trust_proxy)', async () => {
      const viaGet = await client.get('probes', 'whoami', {}, { headers: { 'x-forwarded-for': '203.0.113.9, 198.51.100.4' } });
      expect(viaGet.body.data).to.deep.equal({ method: 'GET', client: '198.51.100.4' });
      const viaPost = await client.post('probes', 'whoami', {});
      expect(viaPost.body.data).to.deep.equal({ method: 'POST', client: '127.0.0.1' });
    });

    it('scopes call.log to the plugin and the request, and api.log to the plugin', async () => {
      const answer = await client.get('probes', 'whoami');
      const requestId = answer.headers.get('x-request-id');
      const lines = logsOf((record) => record.msg === 'probe ran' && record.request_id === requestId);
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include({ plugin: 'tkgate-test-probe', toolkit: 'probes', endpoint: 'whoami', action: 'whoami' });
      const ready = logsOf((record) => record.msg === 'probe plugin ready');
      expect(ready).to.have.length(1);
      expect(ready[0]).to.include({ plugin: 'tkgate-test-probe', api: '1.6' });
    });

    it('answers a foreign error that carries a status as 500 internal_error, its cause logged with the request id', async () => {
      const answer = await client.get('probes', 'foreign');
      expect(answer.status).to.equal(500);
      expect(answer.body.error).to.deep.equal({ code: 'internal_error', message: 'internal error' });
      const logged = logsOf((record) => record.msg === 'request failed' && record.request_id === answer.body.request_id);
      expect(logged).to.have.length(1);
      expect(logged[0]!.level).to.equal('error');
      expect(JSON.stringify(logged[0]!.err)).to.include('driver: row not found');
    });

    it("logs a 4xx GatewayError's cause at warn, never in the answer", async () => {
      const answer = await client.get('probes', 'conflict');
      expect(answer.status).to.equal(409);
      expect(answer.body.error).to.deep.equal({ code: 'probe_conflict', message: 'that thing exists already' });
      const logged = logsOf((record) => record.request_id === answer.body.request_id && record.msg === 'request refused');
      expect(logged).to.have.length(1);
      expect(logged[0]).to.include({ level: 'warn', status: 409, code: 'probe_conflict' });
      expect(JSON.stringify(logged[0]!.err)).to.include('unique key things.name');
    });

    it('answers an error with a status outside 400-599, or a reply with a non-2xx status, as 500', async () => {
      for (const action of ['bad_status', 'bad_reply']) {
        const answer = await client.get('probes', action);
        expect(answer.status, action).to.equal(500);
        expect(answer.body.error.code, action).to.equal('internal_error');
        expect(answer.headers.get('location'), action).to.equal(null);
      }
    });

    it('answers an undeclared code as thrown, and says so in the log once', async () => {
      for (let i = 0; i < 2; i++) {
        const answer = await client.get('probes', 'undeclared');
        expect(answer.status).to.equal(422);
        expect(answer.body.error.code).to.equal('probe_undeclared');
      }
      const warned = logsOf((record) => record.msg === 'undeclared error code' && record.code === 'probe_undeclared');
      expect(warned).to.have.length(1);
      expect(warned[0]).to.include({ level: 'warn', plugin: 'tkgate-test-probe', status: 422 });
    });

    it('writes a streamed body of announced length as written, also to pipelined requests on one connection', async () => {
      const token = await loginToken(gateway.base, 'ann', passwordOf('ann'));
      const url = `${gateway.base}/tk/app/probes/body_exact`;
      for (let i = 0; i < 2; i++) {
        const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        expect(response.status).to.equal(200);
        expect(response.headers.get('content-length')).to.equal('18');
        expect(await response.text()).to.equal('first,second,third');
      }
      // Three requests in one write: the 2nd and 3rd answers wait for their turn behind the 1st.
      const { port, pathname } = new URL(url);
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1');
        let received = '';
        socket.on('data', (data) => {
          received += data.toString('latin1');
          if (received.split('first,second,third').length === 4) socket.end();
        });
        socket.on('close', () => resolve(received)).on('error', reject);
        const request = `GET ${pathname} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`;
        socket.write(request.repeat(3));
      });
      const responses = raw.split(/(?=HTTP\/1\.1 )/);
      expect(responses).to.have.length(3);
      for (const response of responses) {
        expect(response).to.match(/^HTTP\/1\.1 200 /);
        expect(response).to.match(/\r\ncontent-length: 18\r\n/i);
        expect(response.endsWith('\r\n\r\nfirst,second,third')).to.equal(true);
      }
    });

    it('cuts the connection when a body writer writes past its Content-Length: nothing extra reaches the client', async () => {
      const token = await loginToken(gateway.base, 'ann', passwordOf('ann'));
      const { port, pathname } = new URL(`${gateway.base}/tk/app/probes/body_overlong`);
      // Two requests in one write: had the extra bytes gone out, they would open the second answer.
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1');
        let received = '';
        socket.on('data', (data) => (received += data.toString('latin1')));
        socket.on('close', () => resolve(received)).on('error', reject);
        socket.write(`GET ${pathname} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`.repeat(2));
      });
      expect(raw).to.match(/^HTTP\/1\.1 200 /);
      expect(raw).to.match(/\r\ncontent-length: 18\r\n/i);
      expect(raw.endsWith('\r\n\r\nfirst,second,third')).to.equal(true);
      expect(raw).not.to.include('fourth');
      const cut = await eventually('the cut logged', () => logsOf((r) => r.msg === 'streamed response cut' && r.path === pathname).at(-1));
      expect(JSON.stringify(cut)).not.to.include('fourth');
    });

    it('keeps status, code, details and headers of typed errors thrown through a nested copy of @tkgate/core', async () => {
      const where = await client.get('nested', 'where');
      expect(fileURLToPath(where.body.data.core)).to.equal(path.join(nestedCoreDir, 'dist/index.js'));
      const conflict = await client.get('nested', 'conflict');
      expect(conflict.status).to.equal(409);
      expect(conflict.body.error).to.deep.equal({ code: 'nested_wrong_type', message: 'the key holds a list', details: { key: 'k' } });
      const unavailable = await client.get('nested', 'unavailable');
      expect(unavailable.status).to.equal(503);
      expect(unavailable.body.error.code).to.equal('nested_unavailable');
      expect(unavailable.headers.get('retry-after')).to.equal('1');
      const created = await client.get('nested', 'created');
      expect(created.status).to.equal(201);
      expect(created.body.data).to.deep.equal({ id: 1 });
      const stream = await client.get('nested', 'stream');
      expect(stream.headers.get('content-type')).to.equal('application/x-ndjson');
      expect(stream.body).to.equal('{"n":1}\n{"n":2}\n');
    });
  });
}

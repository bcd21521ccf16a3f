import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { eventually } from '../support/eventually.js';
import { call, type Reply } from '../support/http.js';
import { withGateway } from '../support/suite.js';

/** What must not differ between the two ways of answering: status, headers (but the date), the envelope but its id. */
function answer(reply: Reply) {
  const headers = Object.fromEntries([...reply.headers].filter(([name]) => name !== 'date' && name !== 'x-request-id'));
  const requestId = reply.headers.get('x-request-id');
  expect(requestId).to.match(/^[0-9a-f-]{36}$/);
  expect(reply.body.request_id).to.equal(requestId);
  return { status: reply.status, headers, body: { ...reply.body, request_id: 'the id' }, requestId: requestId! };
}

for (const dialect of dialects) {
  describe(`status answered before Koa (${dialect.name})`, () => {
    const corsOrigins = ['http://app.example.test'];
    // This gateway answers a cached session's status directly; `throughKoa` sends every request through Koa.
    const s = withGateway(dialect, [{ username: 'bob', power: 5 }], { server: { port: 0, cors: { origins: corsOrigins } } });
    let throughKoa: GatewayProcess;
    before(async () => {
      throughKoa = await startGateway({
        config: { db: s.bed.dbConfig, server: { port: 0, cors: { origins: corsOrigins } } },
        env: { TKGATE_DIRECT_ANSWERS: 'off' },
      });
    });
    after(() => throughKoa?.stop());

    it('gives the same status, headers and envelope as the Koa route, and the same access line', async () => {
      const token = await s.login('bob');
      await s.auth.status(token); // now cached by this gateway, whichever way it answered
      const direct = answer(await s.auth.status(token));
      const viaKoa = answer(await call('GET', `${throughKoa.base}/auth/status`, { token }));
      expect({ ...direct, requestId: '' }).to.deep.equal({ ...viaKoa, requestId: '' });
      expect(direct.status).to.equal(200);
      expect(direct.headers).to.include({ 'content-type': 'application/json; charset=utf-8', vary: 'Origin' });
      expect(Number(direct.headers['content-length'])).to.equal(Buffer.byteLength(JSON.stringify({ ...direct.body, request_id: 'x'.repeat(36) })));

      // The access line of the answer compared: its fields but the time, the duration and the id.
      const accessLine = (gateway: GatewayProcess, requestId: string) =>
        eventually(`the access line of ${requestId}`, () => {
          const line = gateway.logs.find((l) => l.msg === 'request' && l.request_id === requestId);
          if (!line) return undefined;
          const { time, duration_ms, request_id, ...rest } = line;
          expect([time, duration_ms, request_id].every((v) => v !== undefined)).to.equal(true);
          return rest;
        });
      expect(await accessLine(s.gateway, direct.requestId)).to.deep.equal(await accessLine(throughKoa, viaKoa.requestId));
    });

    it('leaves to Koa what it does not answer itself: a listed Origin, HEAD, a query string, a bad or unknown token', async () => {
      const token = await s.login('bob');
      await s.auth.status(token);
      const origin = await call('GET', `${s.gateway.base}/auth/status`, { token, headers: { origin: corsOrigins[0]! } });
      expect(origin.status).to.equal(200);
      expect(origin.headers.get('access-control-allow-origin')).to.equal(corsOrigins[0]);
      const head = await call('HEAD', `${s.gateway.base}/auth/status`, { token });
      expect(head.status).to.equal(200);
      expect(head.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      const query = await call('GET', `${s.gateway.base}/auth/status?verbose=1`, { token });
      expect(query.status).to.equal(200);
      expect(query.body.endpoint).to.equal('/api/auth/status');
      for (const authorization of [`Bearer ${token}x`, `Basic ${token}`, `Bearer ${'A'.repeat(43)}`]) {
        const refused = await call('GET', `${s.gateway.base}/auth/status`, { headers: { authorization } });
        expect(refused.status, authorization).to.equal(401);
        expect(refused.body.error.code).to.equal('unauthorized');
      }
    });

    it('refuses a session at once after its logout through another gateway (SQLite), within sessions.cache_ttl (MySQL)', async () => {
      const token = await s.login('bob');
      expect((await s.auth.status(token)).status).to.equal(200);
      expect((await call('POST', `${throughKoa.base}/auth/logout`, { token })).status).to.equal(200);
      const deadline = Date.now() + (dialect.name === 'sqlite' ? 0 : 15_000);
      let status = (await s.auth.status(token)).status;
      while (status !== 401 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await s.auth.status(token)).status;
      }
      expect(status).to.equal(401);
    });
  });
}

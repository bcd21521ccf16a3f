import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { call, toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-audit-bin-');
const ok = script('ok', 'printf \'{"done":true}\'');
const failing = script('failing', 'exit 7');

/** Values that must never reach the audit trail: a payload field not listed, a header value, a password. */
const SECRET_FIELD = 'pay-secret-f00d';
const SECRET_HEADER = 'hdr-secret-beef';

const reports = {
  name: 'reports',
  type: 'app',
  endpoints: [
    { path: 'run', method: 'POST', type: 'exec', command: [ok], audit_fields: ['report', 'missing'] },
    { path: 'fail', method: 'POST', type: 'exec', command: [failing] },
    { path: 'quiet', method: 'POST', type: 'exec', command: [ok], audit: false },
    echoEndpoint({ path: 'echo' }),
    echoEndpoint({ path: 'echo-audited', audit: true, audit_fields: ['q'] }),
  ],
};
const watched = { name: 'watched', type: 'app', audit: true, endpoints: [echoEndpoint({ path: 'a' }), echoEndpoint({ path: 'b', audit: false })] };

for (const dialect of dialects) {
  describe(`audit trail through HTTP [${dialect.name}]`, function () {
    this.timeout(120_000);
    const s = withGateway(
      dialect,
      [
        { username: 'root', power: 100 },
        { username: 'ann', power: 10 },
        { username: 'bob', power: 10 },
      ],
      {},
      { toolkitsDir: toolkitDir({ 'reports.yaml': reports, 'watched.yaml': watched }) },
    );
    const admin = async (query: Record<string, string> = {}, token?: string) =>
      call('GET', `${s.gateway.base}/admin/audit?${new URLSearchParams(query)}`, { token: token ?? (await s.login('root')) });
    const events = async (query: Record<string, string>) => {
      const reply = await admin(query);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body.data.events as Array<Record<string, any>>;
    };

    it('records logins (success and failure; the username only when the user exists), logouts and clears', async () => {
      expect((await s.auth.login('ann', 'wrong')).status).to.equal(401);
      expect((await s.auth.login('nobody-such', 'secret-typed-pw')).status).to.equal(401);
      const token = await s.login('ann');
      expect((await s.auth.logout(token)).status).to.equal(200);
      const rootToken = await s.login('root');
      expect((await s.auth.clearSessions(rootToken, { username: 'bob' })).status).to.equal(200);

      const logins = await events({ action: 'login', limit: '100' });
      const ofAnn = logins.filter((event) => event.actor_user_id === s.ids.ann);
      expect(ofAnn.map((event) => [event.status, event.code, event.details?.username])).to.deep.include.members([
        [401, 'invalid_credentials', 'ann'],
        [200, 'ok', 'ann'],
      ]);
      const success = ofAnn.find((event) => event.code === 'ok')!;
      expect(success).to.include({ actor: 'session', username: 'ann' });
      expect(success.credential).to.match(/^[0-9a-f]{8}$/);
      expect(token.startsWith(success.credential)).to.equal(false);
      const unknown = logins.find((event) => event.actor_user_id === null && event.code === 'invalid_credentials')!;
      expect(unknown.details).to.equal(null);
      expect(unknown.client).to.be.a('string');

      const [logout] = await events({ action: 'logout', user: 'ann' });
      expect(logout).to.include({ actor: 'session', credential: success.credential, status: 200, code: 'ok' });
      const [clear] = await events({ action: 'clear_sessions' });
      expect(clear).to.include({ actor_user_id: s.ids.root, status: 200, code: 'ok' });
      expect(clear!.details).to.deep.equal({ user_id: s.ids.bob, cleared: 0 });
      expect(JSON.stringify(await s.bed.db('audit_events').select()))
        .not.to.include('secret-typed-pw')
        .and.not.to.include('nobody-such');
    });

    it('records an exec call with only the listed payload fields and the exit code, never a secret field, header or token', async () => {
      const token = await s.login('bob');
      const client = toolkitClient(s.gateway.base, token);
      const headers = { 'x-api-secret': SECRET_HEADER };
      const run = await client.post('reports', 'run', { report: 'monthly', secret: SECRET_FIELD }, { headers });
      expect(run.status).to.equal(200);
      const fail = await client.post('reports', 'fail', { secret: SECRET_FIELD }, { headers });
      expect(fail.status).to.equal(500);

      const calls = await events({ action: 'call', toolkit: 'reports', user: 'bob' });
      const ran = calls.find((event) => event.request_id === run.body.request_id)!;
      expect(ran).to.include({ actor: 'session', toolkit: 'reports', endpoint: 'run', method: 'POST', status: 200, code: 'ok' });
      expect(ran.credential).to.match(/^[0-9a-f]{8}$/);
      expect(ran.duration_ms).to.be.a('number');
      expect(ran.details).to.deep.equal({ exit_code: 0, payload: { report: 'monthly' } });
      const failed = calls.find((event) => event.request_id === fail.body.request_id)!;
      expect(failed).to.include({ endpoint: 'fail', status: 500, code: 'exec_failed' });
      expect(failed.details).to.deep.equal({ exit_code: 7 });

      const table = JSON.stringify(await s.bed.db('audit_events').select());
      for (const secret of [SECRET_FIELD, SECRET_HEADER, token, passwordOf('bob')]) expect(table).not.to.include(secret);
    });

    it("records a key's creation and revocation, and a call made with a key as actor api_key with the key's id, never the key", async () => {
      const token = await s.login('bob');
      const created = await call('POST', `${s.gateway.base}/auth/api-keys`, { token, body: { name: 'nightly' } });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const { key, id } = created.body.data as { key: string; id: string };

      const run = await toolkitClient(s.gateway.base, key).post('reports', 'run', { report: 'by-key' });
      expect(run.status, JSON.stringify(run.body)).to.equal(200);
      const byKey = (await events({ action: 'call', user: 'bob' })).find((event) => event.request_id === run.body.request_id)!;
      expect(byKey).to.include({ actor: 'api_key', credential: id, actor_user_id: s.ids.bob, status: 200, code: 'ok' });

      expect((await call('DELETE', `${s.gateway.base}/auth/api-keys/${id}`, { token })).status).to.equal(200);
      const [made] = await events({ action: 'apikey_create', user: 'bob' });
      expect(made).to.include({ actor: 'session', actor_user_id: s.ids.bob, status: 201, code: 'ok' });
      expect(made!.details).to.include({ key_id: id, name: 'nightly', user_id: s.ids.bob });
      const [revoked] = await events({ action: 'apikey_revoke', user: 'bob' });
      expect(revoked).to.include({ actor: 'session', status: 200, code: 'ok' });
      expect(revoked!.details).to.include({ key_id: id });
      expect(JSON.stringify(await s.bed.db('audit_events').select())).not.to.include(key);
    });
    it('audits by the endpoint, else the toolkit, else the type (exec yes, internal no)', async () => {
      const client = toolkitClient(s.gateway.base, await s.login('ann'));
      const ids: Record<string, string> = {};
      for (const [toolkit, path] of [
        ['reports', 'quiet'],
        ['reports', 'echo'],
        ['reports', 'echo-audited'],
        ['watched', 'a'],
        ['watched', 'b'],
      ] as const) {
        const reply = await client.post(toolkit, path, { q: 'x', other: 'y' });
        expect(reply.status, `${toolkit}/${path}`).to.equal(200);
        ids[`${toolkit}/${path}`] = reply.body.request_id;
      }
      const recorded = new Set((await events({ action: 'call', user: 'ann' })).map((event) => event.request_id));
      expect(Object.keys(ids).filter((key) => recorded.has(ids[key]))).to.deep.equal(['reports/echo-audited', 'watched/a']);
      const [audited] = await events({ action: 'call', toolkit: 'reports', user: 'ann' });
      expect(audited!.details).to.deep.equal({ payload: { q: 'x' } });
    });

    it('GET admin/audit: 403 below auth.admin_power, 400 naming a bad parameter, newest first with cursor paging', async () => {
      const refused = await admin({}, await s.login('ann'));
      expect(refused.status).to.equal(403);
      expect(refused.body.error.code).to.equal('forbidden');
      expect((await call('GET', `${s.gateway.base}/admin/audit`)).status).to.equal(401);
      for (const [field, value] of [
        ['since', 'yesterday'],
        ['limit', '0'],
        ['limit', '100000'],
        ['cursor', 'abc'],
        ['until', '2026-13-45T99:00:00Z'],
      ]) {
        const bad = await admin({ [field!]: value! });
        expect(bad.status, `${field}=${value}`).to.equal(400);
        expect(bad.body.error.code).to.equal('invalid_payload');
        expect(bad.body.error.details.map((problem: { field: string }) => problem.field)).to.deep.equal([field]);
      }

      const all = await events({ limit: '1000' });
      expect(all.length).to.be.greaterThan(5);
      const ids = all.map((event) => event.id);
      expect(ids).to.deep.equal([...ids].sort((a, b) => b - a));
      const paged: number[] = [];
      let cursor: string | null = null;
      do {
        const reply = await admin({ limit: '2', ...(cursor ? { cursor } : {}) });
        const page = reply.body.data;
        paged.push(...page.events.map((event: { id: number }) => event.id));
        cursor = page.next_cursor;
      } while (cursor);
      // Events written while paging (the admin's own logins) are newer than the first page: not in the later ones.
      expect(paged.filter((id) => id <= ids[0]!)).to.deep.equal(ids);

      expect(await events({ since: '2000-01-01', until: '2000-01-02' })).to.deep.equal([]);
      const recent = await events({ since: '1h', action: 'login' });
      expect(recent.length).to.be.greaterThan(0);
      expect(recent.every((event) => event.action === 'login')).to.equal(true);
    });
  });
}

import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { sleep } from '../support/fixtures.js';
import { writeConfig } from '../support/gateway-process.js';
import { call, toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { createToolkitTables } from '../support/tables.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { disabled, library, shop } from './shop-toolkit.js';
import { createHash } from 'node:crypto';
import { eventually } from '../support/eventually.js';

for (const dialect of dialects) {
  describe(`toolkit pipeline (${dialect.name})`, () => {
    const s = withGateway(
      dialect,
      [
        { username: 'root', power: 100, group: 'staff' },
        { username: 'olga', power: 10, group: 'staff' },
        { username: 'pete', power: 60, group: 'staff' },
        { username: 'quinn', power: 0 },
      ],
      {},
      {
        toolkitsDir: toolkitDir({ 'shop.yaml': shop, 'off.yaml': disabled, 'library.json': library }),
        prepare: async (db) => {
          await createToolkitTables(db);
          await db.schema.createTable('doomed', (table) => {
            table.integer('user_id');
            table.string('value');
          });
          const staff = (await db('core_groups').where({ name: 'staff' }).first('id')).id;
          const pete = (await db('users').where({ username: 'pete' }).first('id')).id;
          await db('jde_associations').insert({ toolkit: 'shop', core_group_id: staff, toolkit_group: 'clerk' });
          await db('toolkit_overrides').insert({ toolkit: 'shop', user_id: pete, toolkit_group: 'manager' });
        },
      },
    );
    const as = async (username: string, kind = 'app') => toolkitClient(s.gateway.base, await s.login(username), kind);

    it('answers 401 before anything else, also for unknown toolkits and oversized bodies', async () => {
      const anonymous = toolkitClient(s.gateway.base, undefined);
      for (const reply of [
        await anonymous.get('shop', 'echo'),
        await anonymous.get('nowhere', 'echo'),
        await anonymous.post('shop', 'guarded', { q: 'x'.repeat(5_000_000) }),
        await toolkitClient(s.gateway.base, 'A'.repeat(43)).get('shop', 'echo'),
      ]) {
        expect(reply.status).to.equal(401);
        expect(reply.body.error.code).to.equal('unauthorized');
      }
    });

    it('answers 404 toolkit_not_found for an unknown, a disabled, or a wrongly typed toolkit', async () => {
      const quinn = await as('quinn');
      for (const [toolkit, client] of [
        ['nowhere', quinn],
        ['off', quinn],
        ['library', quinn],
        ['shop', await as('quinn', 'lib')],
      ] as const) {
        const reply = await client.get(toolkit, 'echo');
        expect(reply.status, toolkit).to.equal(404);
        expect(reply.body.error.code).to.equal('toolkit_not_found');
      }
      const lib = await (await as('quinn', 'lib')).get('library', 'echo');
      expect(lib.status).to.equal(200);
      expect(lib.body.endpoint).to.equal('/api/tk/lib/library/echo');
    });

    it('answers 404 endpoint_not_found for an unknown path and 405 with Allow for another method', async () => {
      const quinn = await as('quinn');
      for (const path of ['nothing', 'admin', 'echo/more', '']) {
        const reply = await quinn.get('shop', path);
        expect(reply.status, path).to.equal(404);
        expect(reply.body.error.code).to.equal('endpoint_not_found');
      }
      const wrongMethod = await quinn.post('shop', 'boom');
      expect(wrongMethod.status).to.equal(405);
      expect(wrongMethod.headers.get('allow')).to.equal('GET');
      expect(wrongMethod.body.error.code).to.equal('method_not_allowed');
      const put = await call('PUT', `${s.gateway.base}/tk/app/shop/echo`, { token: await s.login('quinn') });
      expect(put.status).to.equal(405);
      expect(put.headers.get('allow')).to.equal('GET, POST');
    });

    it('answers 403 below min_power, before the payload is read or validated', async () => {
      const olga = await as('olga');
      const reply = await olga.get('shop', 'admin/echo');
      expect(reply.status).to.equal(403);
      expect(reply.body.error.code).to.equal('forbidden');
      for (const body of [{}, { q: 'x'.repeat(10_000) }, { q: 'y'.repeat(3_000_000) }]) {
        const guarded = await olga.post('shop', 'guarded', body);
        expect(guarded.status).to.equal(403);
      }
      expect((await (await as('pete')).get('shop', 'admin/echo')).status).to.equal(200);
    });

    it('answers 400 invalid_payload for a bad payload, and 413 only past server.max_body_bytes', async () => {
      const pete = await as('pete');
      const missing = await pete.post('shop', 'guarded', {});
      expect(missing.status).to.equal(400);
      expect(missing.body.error.code).to.equal('invalid_payload');
      expect(missing.body.error.details).to.deep.equal([{ field: 'q', rule: 'required', message: 'q is required' }]);
      const tooLong = await pete.post('shop', 'guarded', { q: 'x'.repeat(100) });
      expect(tooLong.status).to.equal(400);
      expect(tooLong.body.error.details).to.deep.equal([{ field: 'body', rule: 'max_body_bytes', message: 'the body must be at most 64 bytes' }]);
      const huge = await pete.post('shop', 'echo', { q: 'x'.repeat(2_000_000) });
      expect(huge.status).to.equal(413);
      expect(huge.body.error.code).to.equal('payload_too_large');
    });

    it('answers 500 db_context_failed when the context query fails, naming no internals', async () => {
      await s.bed.db.schema.dropTable('doomed');
      const reply = await (await as('quinn')).get('shop', 'doomed');
      expect(reply.status).to.equal(500);
      expect(reply.body.error).to.deep.equal({ code: 'db_context_failed', message: 'the database context could not be fetched' });
      expect(JSON.stringify(reply.body.error)).not.to.match(/doomed|SQL|no such table/i);
      await sleep(50);
      expect(s.gateway.output()).to.match(/doomed/);
    });

    it("answers 500 internal_error for a handler's crash, and keeps a plugin's own error code", async () => {
      const quinn = await as('quinn');
      const boom = await quinn.get('shop', 'boom');
      expect(boom.status).to.equal(500);
      expect(boom.body.error).to.deep.equal({ code: 'internal_error', message: 'internal error' });
      expect(JSON.stringify(boom.body)).not.to.include('shadow');
      expect(s.gateway.output()).to.include('secret internals');
      const teapot = await quinn.get('shop', 'teapot');
      expect(teapot.status).to.equal(418);
      expect(teapot.body.error).to.deep.equal({ code: 'teapot', message: 'I am a teapot', details: { brew: 'tea' } });
    });

    it('builds exactly the request context of the seed (2.2)', async () => {
      const reply = await (await as('quinn')).get('shop', 'echo', { a: '1' });
      expect(reply.status).to.equal(200);
      expect(reply.body.data).to.deep.equal({
        user_id: s.ids.quinn,
        username: 'quinn',
        power: 0,
        core_group_id: null,
        core_group_name: null,
        toolkit_group: 'customer',
        request_id: reply.headers.get('x-request-id'),
        payload: { a: '1' },
        db_context: {},
      });
      expect(reply.body.request_id).to.equal(reply.headers.get('x-request-id'));
    });

    it('resolves the toolkit group: override, then core-group association, then default_group, else null', async () => {
      const group = async (username: string, toolkit = 'shop', kind = 'app') => (await (await as(username, kind)).get(toolkit, 'echo')).body.data.toolkit_group;
      expect(await group('pete')).to.equal('manager');
      expect(await group('olga')).to.equal('clerk');
      expect(await group('quinn')).to.equal('customer');
      expect(await group('olga', 'library', 'lib')).to.equal(null);
      const olgaContext = (await (await as('olga')).get('shop', 'echo')).body.data;
      expect(olgaContext.core_group_name).to.equal('staff');
      expect(olgaContext.core_group_id).to.be.a('number');
    });

    it('sees a changed mapping on the next request and a changed group within sessions.cache_ttl, without a new login', async () => {
      const olga = await as('olga');
      const config = writeConfig({ db: s.bed.dbConfig });
      expect((await runCli(['group', 'override', 'shop', 'olga', 'auditor', '--config', config])).code).to.equal(0);
      expect((await olga.get('shop', 'echo')).body.data.toolkit_group).to.equal('auditor');
      await s.bed.db('toolkit_overrides').where({ toolkit_group: 'auditor' }).delete();
      expect((await runCli(['user', 'set', 'olga', '--group', 'night-shift', '--config', config])).code).to.equal(0);
      // The caller's row may be trusted for sessions.cache_ttl (1 s) on MySQL; exact on SQLite.
      await eventually('the new core group is seen', async () => (await olga.get('shop', 'echo')).body.data.core_group_name === 'night-shift');
      const moved = (await olga.get('shop', 'echo')).body.data;
      expect(moved.core_group_name).to.equal('night-shift');
      expect(moved.toolkit_group).to.equal('customer');
    });

    it('injects the db context in both forms and applies overwrite_wrapping', async () => {
      const quinnId = s.ids.quinn!;
      await s.bed.db('profiles').insert([
        { user_id: quinnId, email: 'quinn@example.org', city: 'Oslo' },
        { user_id: s.ids.olga, email: 'olga@example.org', city: 'Rome' },
      ]);
      await s.bed.db('orders').insert([
        { user_id: quinnId, total: 30, status: 'open' },
        { user_id: s.ids.olga, total: 45, status: 'open' },
        { user_id: quinnId, total: 99, status: 'paid' },
      ]);
      const reply = await (await as('quinn')).get('shop', 'context', { status: 'open', ignored: 'x' });
      expect(reply.status).to.equal(200);
      const context = reply.body.data;
      expect(context).not.to.have.property('power');
      expect(context.email).to.equal('quinn@example.org');
      expect(context.db_context).to.deep.equal({ login: 'quinn', town: 'Oslo', total: [30, 45] });
      expect(context.payload).to.deep.equal({ status: 'open' });
    });

    it('binds a payload value with quotes and SQL as a value, never as SQL', async () => {
      for (const status of ["open' OR '1'='1", 'open"; DROP TABLE orders; --', "' UNION SELECT password_hash FROM users --"]) {
        const reply = await (await as('quinn')).get('shop', 'context', { status });
        expect(reply.status).to.equal(200);
        expect(reply.body.data.db_context.total).to.deep.equal([]);
      }
      expect(await s.bed.db('orders').count({ n: '*' }).first()).to.deep.equal({ n: 3 });
    });

    it('answers 400 when a filtered entry needs a payload field that is absent', async () => {
      const reply = await (await as('quinn')).get('shop', 'context');
      expect(reply.status).to.equal(400);
      expect(reply.body.error.details).to.deep.equal([{ field: 'status', rule: 'required', message: 'status is needed to look up total' }]);
    });

    it("gives a plugin that reads the client's signal late, after the client left, an aborted signal", async () => {
      const token = await s.login('quinn');
      const client = new AbortController();
      const leaving = fetch(`${s.gateway.base}/tk/app/shop/late-signal`, { headers: { authorization: `Bearer ${token}` }, signal: client.signal }).catch(
        () => 'left',
      );
      await sleep(100);
      client.abort();
      expect(await leaving).to.equal('left');
      let line: string | undefined;
      for (let i = 0; i < 50 && !line; i++) {
        await sleep(20);
        line = s.gateway
          .output()
          .split('\n')
          .find((l) => l.includes('"signal read late"'));
      }
      expect(JSON.parse(line!)).to.include({ aborted: true });
    });

    it('a logout while a slow request of that session runs is final', async () => {
      const token = await s.login('quinn');
      const slow = toolkitClient(s.gateway.base, token).get('shop', 'slow', { n: '1' });
      await sleep(200);
      expect((await s.auth.logout(token)).status).to.equal(200);
      const finished = await slow;
      expect(finished.status).to.equal(200);
      expect(finished.body.data).to.deep.equal({ slept: true, payload: { n: '1' } });
      await sleep(100);
      expect((await s.auth.status(token)).status).to.equal(401);
      const hash = createHash('sha256').update(token).digest('hex');
      expect(await s.bed.db('sessions').where({ token_hash: hash })).to.have.length(0);
    });
  });
}

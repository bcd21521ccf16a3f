import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { call } from '../support/http.js';
import { withGateway } from '../support/suite.js';

for (const dialect of dialects) {
  describe(`logout, status and clear-sessions (${dialect.name})`, () => {
    const s = withGateway(dialect, [
      { username: 'root', power: 100 },
      { username: 'bob', power: 5 },
      { username: 'carol', power: 99 },
    ]);

    it('status reports the live session and its times without a write', async () => {
      const loginReply = await s.auth.login('bob', passwordOf('bob'));
      const token = loginReply.body.data.token;
      const reply = await s.auth.status(token);
      expect(reply.status).to.equal(200);
      expect(reply.body.endpoint).to.equal('/api/auth/status');
      const data = reply.body.data;
      expect(data.active).to.equal(true);
      expect(data.user).to.deep.equal({ id: s.ids.bob, username: 'bob', power: 5 });
      expect(data.expires_at).to.equal(loginReply.body.data.expires_at);
      expect(data.last_used_at).to.equal(data.created_at);
      const row = await s.bed.db('sessions').where({ user_id: s.ids.bob }).first();
      expect(new Date(Number(row.created_at)).toISOString()).to.equal(data.created_at);
      expect(new Date(Number(row.expires_at)).toISOString()).to.equal(data.expires_at);
    });

    it('answers 401 unauthorized for no token, a malformed one and a well-formed unknown one', async () => {
      const attempts = [
        await s.auth.status(),
        await call('GET', `${s.gateway.base}/auth/status`, { headers: { authorization: 'Basic Ym9iOnB3' } }),
        await s.auth.status('not-a-token'),
        await s.auth.status('A'.repeat(43)),
        await s.auth.status(`${'A'.repeat(42)}=`),
      ];
      for (const reply of attempts) {
        expect(reply.status).to.equal(401);
        expect(reply.body.error.code).to.equal('unauthorized');
      }
    });

    it('logout ends the session for good', async () => {
      const token = await s.login('bob');
      const reply = await s.auth.logout(token);
      expect(reply.status).to.equal(200);
      expect(reply.body.data).to.deep.equal({ logged_out: true });
      expect((await s.auth.status(token)).status).to.equal(401);
      const again = await s.auth.logout(token);
      expect(again.status).to.equal(401);
      expect(again.body.error.code).to.equal('unauthorized');
    });

    it('clear-sessions by username or user_id ends every session of that user', async () => {
      const admin = await s.login('root');
      const bobTokens = [await s.login('bob'), await s.login('bob')];
      const before = await s.bed.db('sessions').where({ user_id: s.ids.bob }).count({ n: '*' }).first();
      const byName = await s.auth.clearSessions(admin, { username: 'bob' });
      expect(byName.status).to.equal(200);
      expect(byName.body.data).to.deep.equal({ user_id: s.ids.bob, cleared: Number(before!.n) });
      for (const token of bobTokens) expect((await s.auth.status(token)).status).to.equal(401);
      expect(await s.bed.db('sessions').where({ user_id: s.ids.bob }).count({ n: '*' }).first()).to.deep.equal({ n: 0 });

      await s.login('bob');
      const byId = await s.auth.clearSessions(admin, { user_id: s.ids.bob });
      expect(byId.body.data).to.deep.equal({ user_id: s.ids.bob, cleared: 1 });
      expect((await s.auth.status(admin)).status).to.equal(200);
    });

    it('clear-sessions needs auth.admin_power (403), a valid body (400) and a known user (404)', async () => {
      const admin = await s.login('root');
      const almost = await s.login('carol');
      const denied = await s.auth.clearSessions(almost, { username: 'bob' });
      expect(denied.status).to.equal(403);
      expect(denied.body.error.code).to.equal('forbidden');
      expect((await call('POST', `${s.gateway.base}/auth/clear-sessions`, { body: { username: 'bob' } })).status).to.equal(401);

      for (const body of [{}, { username: 'bob', user_id: s.ids.bob }, { user_id: 'one' }, { username: 7 }]) {
        const reply = await s.auth.clearSessions(admin, body);
        expect(reply.status, JSON.stringify(body)).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_payload');
        expect(reply.body.error.details[0].field).to.be.oneOf(['username', 'user_id']);
      }
      const unknown = await s.auth.clearSessions(admin, { username: 'nobody' });
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error.code).to.equal('user_not_found');
      const unknownId = await s.auth.clearSessions(admin, { user_id: 9999 });
      expect(unknownId.status).to.equal(404);
    });
  });
}

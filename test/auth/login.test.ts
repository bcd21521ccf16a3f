import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { call } from '../support/http.js';
import { withGateway } from '../support/suite.js';

for (const dialect of dialects) {
  describe(`POST /auth/login (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'alice', power: 10 }, { username: 'dora' }], { server: { port: 0, max_body_bytes: 2048 } }, { process: true }); // stdout is scanned;
    before(async () => {
      await s.bed.db('users').where({ username: 'dora' }).update({ disabled: true });
    });

    it('answers a token, its expiry and the user in the success envelope', async () => {
      const before = Date.now();
      const reply = await s.auth.login('alice', passwordOf('alice'));
      expect(reply.status).to.equal(200);
      expect(reply.body.success).to.equal(true);
      expect(reply.body.endpoint).to.equal('/api/auth/login');
      expect(reply.body.request_id).to.be.a('string').and.equal(reply.headers.get('x-request-id'));
      const data = reply.body.data;
      expect(data.token).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(data.token_type).to.equal('Bearer');
      expect(data.idle_timeout_s).to.equal(1800);
      expect(data.user).to.deep.equal({ id: 1, username: 'alice', power: 10 });
      const expires = Date.parse(data.expires_at);
      expect(data.expires_at).to.equal(new Date(expires).toISOString());
      expect(expires - before).to.be.within(1800_000 - 5_000, 1800_000 + 5_000);
    });

    it('gives a wrong password, an unknown user and a disabled user the same 401', async () => {
      const replies = [
        await s.auth.login('alice', 'wrong-password'),
        await s.auth.login('nobody', 'whatever-password'),
        await s.auth.login('dora', passwordOf('dora')),
      ];
      for (const reply of replies) {
        expect(reply.status).to.equal(401);
        expect(reply.body.success).to.equal(false);
        expect(reply.body.error).to.deep.equal({ code: 'invalid_credentials', message: 'invalid username or password' });
        expect(reply.body.data).to.equal(undefined);
      }
    });

    it('refuses broken JSON, missing fields, wrong types and non-objects with 400 naming the field', async () => {
      const url = `${s.gateway.base}/auth/login`;
      const cases: Array<[Parameters<typeof call>[2], string, string]> = [
        [{ rawBody: '{"username": "alice",', headers: { 'content-type': 'application/json' } }, 'body', 'syntax'],
        [{ body: { username: 'alice' } }, 'password', 'required'],
        [{ body: { username: 12, password: 'x' } }, 'username', 'type'],
        [{ body: { username: '', password: 'x' } }, 'username', 'type'],
        [{ body: { username: 'a'.repeat(65), password: 'x' } }, 'username', 'max_length'],
        [{ body: ['alice'] }, 'body', 'type'],
        [{ rawBody: 'username=alice', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 'content-type', 'allowed_content_types'],
        [{}, 'username', 'required'],
      ];
      for (const [options, field, rule] of cases) {
        const reply = await call('POST', url, options);
        expect(reply.status, JSON.stringify(options)).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_payload');
        expect(reply.body.error.details).to.deep.include.members([
          { field, rule, message: reply.body.error.details.find((d: { field: string }) => d.field === field)?.message },
        ]);
      }
    });

    it('answers 413 past server.max_body_bytes, before reading the body', async () => {
      const reply = await call('POST', `${s.gateway.base}/auth/login`, { body: { username: 'alice', password: 'x'.repeat(4096) } });
      expect(reply.status).to.equal(413);
      expect(reply.body.error.code).to.equal('payload_too_large');
      expect(reply.body.error.details).to.deep.equal({ max_body_bytes: 2048 });
    });

    it('answers 405 with Allow for another method, and 404 for an unknown route', async () => {
      const wrongMethod = await call('GET', `${s.gateway.base}/auth/login`);
      expect(wrongMethod.status).to.equal(405);
      expect(wrongMethod.headers.get('allow')).to.equal('POST');
      expect(wrongMethod.body.error.code).to.equal('method_not_allowed');
      const unknown = await call('GET', `${s.gateway.base}/auth/nothing-here`);
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error.code).to.equal('not_found');
      expect(unknown.body.endpoint).to.equal('/api/auth/nothing-here');
    });

    it('never writes a password or token to the log', async () => {
      const token = (await s.auth.login('alice', passwordOf('alice'))).body.data.token as string;
      expect(s.gateway.output()).not.to.include(token);
      expect(s.gateway.output()).not.to.include(passwordOf('alice'));
    });
  });
}

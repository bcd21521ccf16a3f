import { validate } from '@readme/openapi-parser';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { authClient, call } from '../support/http.js';
import { scrape, valueOf } from '../support/ops.js';
import { APP, browserAtCallback, exchange, RETURN_TO, signInCode, signInToken, visitCallback, withSso } from './sso-suite.js';
import { UserAgent } from './user-agent.js';

for (const dialect of dialects) {
  describe(`single sign-on with a real OpenID provider (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withSso(dialect, { users: [{ username: 'taken' }], config: { sessions: { cache_ttl: '1s', max_per_user: 3 } } });
    const cli = (...args: string[]) => runCli([...args, '--config', writeConfig({ db: s.bed.dbConfig })]);
    /** A sign-in up to the callback URL the provider sends the browser to, visited by that browser. */
    const callbackOf = async (sub: string) => {
      const { agent, callback } = await browserAtCallback(s.base, sub);
      return visitCallback(callback, agent);
    };
    before(() => {
      s.idp.addAccount({ sub: 'u-1001', claims: { preferred_username: 'alice', email: 'alice@example.org', groups: ['staff', 'admins'] } });
      s.idp.addAccount({ sub: 'u-1002', claims: { preferred_username: 'bob', groups: ['staff'] } });
      s.idp.addAccount({ sub: 'u-1003', claims: { preferred_username: 'taken' } });
      s.idp.addAccount({ sub: 'u-1004', claims: { email: 'dora@example.org', groups: 'nobody' } });
    });

    it('signs in through the provider: login redirect with PKCE, callback, login_code, exchange for a session', async () => {
      const start = await fetch(`${s.base}/auth/oidc/corp/login?return_to=${encodeURIComponent(`${RETURN_TO}/page?x=1`)}`, { redirect: 'manual' });
      expect(start.status).to.equal(302);
      const authorize = new URL(start.headers.get('location')!);
      expect(authorize.origin).to.equal(s.idp.issuer);
      expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');
      expect(authorize.searchParams.get('code_challenge')).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(authorize.searchParams.get('state')).to.be.a('string');
      expect(authorize.searchParams.get('nonce')).to.be.a('string');
      expect(authorize.searchParams.get('response_type')).to.equal('code');
      expect(authorize.searchParams.get('redirect_uri')).to.equal(`${s.base}/auth/oidc/corp/callback`);

      const reply = await exchange(s.base, await signInCode(s, 'u-1001'));
      expect(reply.status).to.equal(200);
      expect(Object.keys(reply.body.data).sort()).to.deep.equal(['expires_at', 'idle_timeout_s', 'token', 'token_type', 'user']);
      expect(reply.body.data.token_type).to.equal('Bearer');
      expect(reply.body.data.user).to.include({ username: 'alice', power: 100 });

      const status = await authClient(s.base).status(reply.body.data.token);
      expect(status.status).to.equal(200);
      expect(status.body.data).to.include({ active: true, provider: 'corp' });
      const row = await s.bed.db('users').where({ username: 'alice' }).first();
      expect(row).to.include({ oidc_provider: 'corp', oidc_subject: 'u-1001', password_hash: '' });
      const group = await s.bed.db('core_groups').where({ id: row.core_group_id }).first();
      expect(group.name).to.equal('employees'); // the first value of the claim that the map names
    });

    it('describes the sign-in routes in openapi.json, a valid OpenAPI 3.1 document', async () => {
      const token = await signInToken(s, 'u-1002');
      const answer = await fetch(`${s.base}/openapi.json`, { headers: { authorization: `Bearer ${token}` } });
      expect(answer.status).to.equal(200);
      const document = (await answer.json()) as { paths: Record<string, { post?: { responses: object } }> };
      expect(Object.keys(document.paths)).to.include.members([
        '/auth/oidc/{provider}/login',
        '/auth/oidc/{provider}/callback',
        '/auth/oidc/exchange',
        '/auth/oidc/{provider}/backchannel-logout',
      ]);
      expect(Object.keys(document.paths['/auth/oidc/exchange']!.post!.responses)).to.include.members(['200', '400', '413']);
      const result = await validate(structuredClone(document) as Parameters<typeof validate>[0]);
      expect(result.valid, JSON.stringify(result)).to.equal(true);
    });

    it('maps power and core group from the claims at every sign-in, and matches by subject only', async () => {
      await signInToken(s, 'u-1002');
      expect(await s.bed.db('users').where({ username: 'bob' }).first('power')).to.deep.include({ power: 10 });
      s.idp.addAccount({ sub: 'u-1002', claims: { preferred_username: 'bob-renamed', groups: ['contractors'] } });
      const token = await signInToken(s, 'u-1002');
      const status = await authClient(s.base).status(token);
      expect(status.body.data.user).to.include({ username: 'bob', power: 1 }); // the same user; power back to the default
      const row = await s.bed.db('users').where({ oidc_subject: 'u-1002' }).first();
      expect(row.core_group_id).to.equal(null);
    });

    it('uses the e-mail when there is no preferred_username', async () => {
      const token = await signInToken(s, 'u-1004');
      expect((await authClient(s.base).status(token)).body.data.user).to.include({ username: 'dora@example.org', power: 1 });
    });

    it('refuses a claimed username that belongs to another user: #error=account_conflict, nothing created', async () => {
      const before = await s.bed.db('users').count({ n: '*' }).first();
      const answer = await callbackOf('u-1003');
      expect(answer.status).to.equal(302);
      expect(answer.location).to.equal(`${RETURN_TO}#error=account_conflict`);
      expect(await s.bed.db('users').count({ n: '*' }).first()).to.deep.equal(before);
      expect(await s.bed.db('oidc_login_codes').count({ n: '*' }).first()).to.deep.include({ n: 0 });
    });

    it('a login_code is single use; unknown and malformed codes are 400', async () => {
      const agent = new UserAgent();
      const code = await signInCode(s, 'u-1001', { agent });
      const replayer = agent.copy(); // the code's cookie too
      expect((await exchange(s.base, code)).status).to.equal(200);
      expect(
        agent.cookieNames().filter((name) => name.startsWith('tkgate-')),
        'the exchange clears the cookie',
      ).to.deep.equal([]);
      const again = await exchange(s.base, code, replayer);
      expect(again.status).to.equal(400);
      expect(again.body.error.code).to.equal('invalid_login_code');
      expect((await exchange(s.base, 'x'.repeat(43))).body.error.code).to.equal('invalid_login_code');
      const missing = await call('POST', `${s.base}/auth/oidc/exchange`, { body: {} });
      expect(missing.status).to.equal(400);
      expect(missing.body.error.details[0]).to.include({ field: 'login_code', rule: 'required' });
    });

    it('a login_code works only in the browser it was handed to: without its cookie it is 400 and stays unused', async () => {
      const signedIn = new UserAgent();
      const code = await signInCode(s, 'u-1002', { agent: signedIn });
      expect(signedIn.cookieNames().filter((name) => /^tkgate-login-[\w-]{12}$/.test(name))).to.have.length(1);
      // The attacker's own code, sent to a victim: the victim's browser has no cookie for it, or one for another code.
      const victim = new UserAgent();
      await signInCode(s, 'u-1004', { agent: victim });
      for (const browser of [null, new UserAgent(), victim]) {
        const refused = await exchange(s.base, code, browser);
        expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
        expect(refused.body.error.code).to.equal('invalid_login_code');
      }
      expect(s.gateways[0]!.logs.some((line) => line.msg === 'login_code refused')).to.equal(true);
      // The browser that signed in still exchanges it.
      const reply = await exchange(s.base, code, signedIn);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body.data.user).to.include({ username: 'bob' });
    });

    it('OIDC users have no password: password login answers 401 as for a wrong one', async () => {
      const reply = await authClient(s.base).login('alice', '');
      expect(reply.status).to.equal(400); // an empty password is a bad body, as for anyone
      const wrong = await authClient(s.base).login('alice', 'anything');
      expect(wrong.status).to.equal(401);
      expect(wrong.body.error.code).to.equal('invalid_credentials');
    });

    it('a disabled user is refused with #error=user_disabled', async () => {
      const token = await signInToken(s, 'u-1002');
      expect((await cli('user', 'disable', 'bob')).code).to.equal(0);
      expect((await authClient(s.base).status(token)).status).to.equal(401);
      const answer = await callbackOf('u-1002');
      expect(answer.location).to.equal(`${RETURN_TO}#error=user_disabled`);
      expect((await cli('user', 'enable', 'bob')).code).to.equal(0);
    });

    it('logout of an OIDC session answers the provider end_session_url (client_id, post_logout_redirect_uri)', async () => {
      const token = await signInToken(s, 'u-1001');
      const reply = await authClient(s.base).logout(token);
      expect(reply.status).to.equal(200);
      const url = new URL(reply.body.data.end_session_url);
      expect(reply.body.data.logged_out).to.equal(true);
      expect(`${url.origin}${url.pathname}`).to.equal(`${s.idp.issuer}/session/end`);
      expect(url.searchParams.get('client_id')).to.equal('tkgate-gateway');
      expect(url.searchParams.get('post_logout_redirect_uri')).to.equal(`${APP}/bye`);
      expect((await authClient(s.base).status(token)).status).to.equal(401);
    });

    it('user list shows the provider of each user', async () => {
      const listed = await cli('user', 'list');
      expect(listed.code, listed.stderr).to.equal(0);
      const lines = listed.stdout.trim().split('\n');
      expect(lines[0]).to.match(/\sPROVIDER$/);
      expect(lines.some((line) => /^\d+\s+alice\s.*\scorp$/.test(line))).to.equal(true);
      expect(lines.some((line) => /^\d+\s+taken\s.*\s-$/.test(line))).to.equal(true);
    });

    it('an exchange creates its session as a login does: the oldest beyond sessions.max_per_user goes', async () => {
      s.idp.addAccount({ sub: 'u-1005', claims: { preferred_username: 'fay' } });
      const tokens = [];
      for (let i = 0; i < 4; i++) tokens.push(await signInToken(s, 'u-1005'));
      expect((await authClient(s.base).status(tokens[0]!)).status).to.equal(401);
      for (const token of tokens.slice(1)) expect((await authClient(s.base).status(token)).status).to.equal(200);
      const fay = await s.bed.db('users').where({ username: 'fay' }).first('id');
      const rows = await s.bed.db('sessions').where({ user_id: fay.id }).select('oidc_provider', 'oidc_subject', 'oidc_sid');
      expect(rows).to.have.length(3);
      for (const row of rows) expect(row).to.include({ oidc_provider: 'corp', oidc_subject: 'u-1005' });
      expect(new Set(rows.map((row) => row.oidc_sid)).size, 'one provider session per sign-in (a fresh browser each)').to.equal(3);
    });

    it('counts logins by method', async () => {
      const { samples } = await scrape(s.gateways[0]!);
      expect(valueOf(samples, 'tkgate_logins_total', { result: 'success', method: 'oidc' })).to.be.greaterThan(3);
      expect(valueOf(samples, 'tkgate_logins_total', { result: 'invalid', method: 'oidc' })).to.equal(2);
      expect(valueOf(samples, 'tkgate_logins_total', { result: 'invalid', method: 'password' })).to.equal(1);
    });

    it('unknown provider 404, return_to outside the list 400, and no token in any log line', async () => {
      const unknown = await call('GET', `${s.base}/auth/oidc/nope/login?return_to=${encodeURIComponent(RETURN_TO)}`);
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error.code).to.equal('provider_not_found');
      const outside = await call('GET', `${s.base}/auth/oidc/corp/login?return_to=${encodeURIComponent('https://evil.test/after')}`);
      expect(outside.status).to.equal(400);
      expect(outside.body.error.code).to.equal('invalid_return_to');
      const output = s.gateways[0]!.output();
      expect(output).not.to.match(/login_code=|code=|eyJ/);
    });
  });
}

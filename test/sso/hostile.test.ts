import { expect } from 'chai';
import type { JWTPayload } from 'jose';
import { dialects } from '../support/databases.js';
import { call } from '../support/http.js';
import { claimsOf, hmacWithSecret, signed, strangerKey, unsigned } from './forged-tokens.js';
import { APP, browserAtCallback, callbackUrl, CLIENT_SECRET, loginUrl, RETURN_TO, visitCallback, withSso } from './sso-suite.js';
import { UserAgent } from './user-agent.js';

const count = async (db: any, table: string, where: Record<string, unknown> = {}) => Number((await db(table).where(where).count({ n: '*' }).first()).n);

for (const dialect of dialects) {
  describe(`single sign-on refuses hostile callbacks and redirects (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withSso(dialect);
    const now = () => Math.floor(Date.now() / 1000);
    before(() => {
      s.idp.addAccount({ sub: 'u-mallory', claims: { preferred_username: 'mallory' } });
      s.idp.addAccount({ sub: 'u-carol', claims: { preferred_username: 'carol' } });
    });
    afterEach(() => (s.idp.tamper = undefined));

    /** A sign-in of mallory up to the callback URL the provider sends the browser to, and that browser. */
    const callbackOf = (sub = 'u-mallory') => browserAtCallback(s.base, sub);

    /** Nothing was created for mallory: no user, no login code, no session. */
    async function nothingCreated() {
      expect(await count(s.bed.db, 'users', { username: 'mallory' })).to.equal(0);
      expect(await count(s.bed.db, 'oidc_login_codes')).to.equal(0);
      expect(await count(s.bed.db, 'sessions')).to.equal(0);
    }

    it('a forged state is 400 invalid_state in the envelope, and nothing is created', async () => {
      const forged = await call('GET', `${callbackUrl(s.base)}?code=abc&state=forged-state`);
      expect(forged.status).to.equal(400);
      expect(forged.body.error.code).to.equal('invalid_state');
      const none = await call('GET', callbackUrl(s.base));
      expect(none.body.error.code).to.equal('invalid_state');
      await nothingCreated();
    });

    it('an expired state is 400 invalid_state', async () => {
      const { agent, callback } = await callbackOf();
      await s.bed.db('oidc_pending_logins').update({ expires_at: Date.now() - 1 });
      const answer = await visitCallback(callback, agent);
      expect(answer.status).to.equal(400);
      expect(JSON.parse(answer.body).error.code).to.equal('invalid_state');
      await nothingCreated();
    });

    it('a replayed callback (state and code used) is 400 invalid_state; a used code with a fresh state is #error=access_denied', async () => {
      const { agent, callback } = await callbackOf('u-carol');
      const first = await visitCallback(callback, agent);
      expect(first.fragment.get('login_code')).to.be.a('string');
      const replay = await visitCallback(callback, agent);
      expect(replay.status).to.equal(400);
      expect(JSON.parse(replay.body).error.code).to.equal('invalid_state');

      // The same code under another pending login's state: the provider refuses it (and the PKCE verifier differs).
      const later = await callbackOf('u-carol');
      const fresh = new URL(later.callback);
      const usedCode = new URL(callback).searchParams.get('code')!;
      fresh.searchParams.set('code', usedCode);
      const codesBefore = await count(s.bed.db, 'oidc_login_codes');
      const answer = await visitCallback(fresh.href, later.agent);
      expect(answer.status).to.equal(302);
      expect(answer.location).to.equal(`${RETURN_TO}#error=access_denied`);
      expect(await count(s.bed.db, 'oidc_login_codes')).to.equal(codesBefore);
      await s.bed.db('oidc_login_codes').delete();
    });

    it('a callback completed by another client than the browser that started the sign-in is #error=invalid_state, and nothing is created', async () => {
      // Login CSRF: mallory starts a sign-in and sends her callback URL to a victim, whose browser never started it.
      const { callback } = await callbackOf();
      const answer = await visitCallback(callback, new UserAgent());
      expect(answer.status, answer.body).to.equal(302);
      expect(answer.location).to.equal(`${RETURN_TO}#error=invalid_state`);
      await nothingCreated();
      // Nor by a browser that started a sign-in of its own (it holds that one's cookie, not this one's).
      const victim = new UserAgent();
      expect((await victim.get(loginUrl(s.base))).status).to.equal(302);
      const again = await visitCallback((await callbackOf()).callback, victim);
      expect(again.location).to.equal(`${RETURN_TO}#error=invalid_state`);
      await nothingCreated();
    });

    const forgeries: Array<[string, (token: string) => Promise<string>]> = [
      ['signed by a key the provider never published (same kid)', async (token) => signed(claimsOf(token), await strangerKey(), s.idp.kid)],
      ['signed by an unknown key id (the JWKS is fetched again, then refused)', async (token) => signed(claimsOf(token), await strangerKey(), 'unknown-kid')],
      ['for another audience', (token) => signed({ ...claimsOf(token), aud: 'another-client' }, s.idp.signingKey, s.idp.kid)],
      ['from another issuer', (token) => signed({ ...claimsOf(token), iss: 'http://127.0.0.1:1' }, s.idp.signingKey, s.idp.kid)],
      ['expired', (token) => signed({ ...claimsOf(token), iat: now() - 7200, exp: now() - 3600 }, s.idp.signingKey, s.idp.kid)],
      ['issued an hour in the future', (token) => signed({ ...claimsOf(token), iat: now() + 3600, exp: now() + 7200 }, s.idp.signingKey, s.idp.kid)],
      ['without its nonce', (token) => signed(withoutNonce(claimsOf(token)), s.idp.signingKey, s.idp.kid)],
      ['with another nonce', (token) => signed({ ...claimsOf(token), nonce: 'not-the-nonce' }, s.idp.signingKey, s.idp.kid)],
      ['with alg none', async (token) => unsigned(claimsOf(token))],
      ['signed with HMAC and the client secret as key', (token) => hmacWithSecret(claimsOf(token), CLIENT_SECRET)],
      [
        'with an azp naming another client',
        (token) => signed({ ...claimsOf(token), aud: ['tkgate-gateway', 'other'], azp: 'other' }, s.idp.signingKey, s.idp.kid),
      ],
    ];
    for (const [what, forge] of forgeries) {
      it(`an ID token ${what} is #error=invalid_id_token, and nothing is created`, async () => {
        s.idp.tamper = forge;
        const { agent, callback } = await callbackOf();
        const answer = await visitCallback(callback, agent);
        expect(answer.status).to.equal(302);
        expect(answer.location).to.equal(`${RETURN_TO}#error=invalid_id_token`);
        await nothingCreated();
      });
    }

    it('the provider reporting access_denied is #error=access_denied', async () => {
      const agent = new UserAgent();
      const start = await agent.get(loginUrl(s.base));
      const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
      const answer = await visitCallback(`${callbackUrl(s.base)}?${new URLSearchParams({ error: 'access_denied', state, iss: s.idp.issuer })}`, agent);
      expect(answer.location).to.equal(`${RETURN_TO}#error=access_denied`);
      await nothingCreated();
    });

    it('a token endpoint that does not answer in time is #error=access_denied (the provider failed, not the token)', async function () {
      this.timeout(90_000);
      s.idp.tokenDelayMs = 15_000;
      try {
        const { agent, callback } = await callbackOf();
        const answer = await visitCallback(callback, agent);
        expect(answer.location).to.equal(`${RETURN_TO}#error=access_denied`);
        await nothingCreated();
      } finally {
        s.idp.tokenDelayMs = 0;
      }
    });

    const refused = [
      'https://evil.test/after',
      'http://app.example.test.evil.test/after',
      'http://app.example.test@evil.test/after',
      'http://user:pass@app.example.test/after',
      'http://app.example.test:8080/after',
      'https://app.example.test/after',
      'http://app.example.test/afterwards',
      'http://app.example.test/after/../admin',
      'http://app.example.test/%2e%2e/admin',
      'http://app.example.test\\@evil.test/after',
      '//evil.test/after',
      '/after',
      'javascript:alert(1)//app.example.test/after',
      `${APP}`,
    ];
    for (const returnTo of refused) {
      it(`return_to ${returnTo} is 400 invalid_return_to and no login is pending`, async () => {
        const before = await count(s.bed.db, 'oidc_pending_logins');
        const reply = await call('GET', loginUrl(s.base, returnTo));
        expect(reply.status).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_return_to');
        expect(await count(s.bed.db, 'oidc_pending_logins')).to.equal(before);
      });
    }

    for (const returnTo of [RETURN_TO, `${RETURN_TO}/`, `${RETURN_TO}/deep/page?tab=1#old`]) {
      it(`return_to ${returnTo} is allowed`, async () => {
        const start = await fetch(loginUrl(s.base, returnTo), { redirect: 'manual' });
        expect(start.status).to.equal(302);
      });
    }
  });
}

function withoutNonce(claims: JWTPayload): JWTPayload {
  const { nonce, ...rest } = claims;
  void nonce;
  return rest;
}

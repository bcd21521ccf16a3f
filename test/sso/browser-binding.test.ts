import https from 'node:https';
import { expect } from 'chai';
import { makeCertificates } from '../support/certificates.js';
import { dialects } from '../support/databases.js';
import { browserAtCallback, loginUrl, withSso } from './sso-suite.js';

const certs = makeCertificates();

/** The login cookie of a login start: its whole Set-Cookie line. */
function loginCookie(setCookie: string[]): string {
  const lines = setCookie.filter((line) => /tkgate-oidc-/.test(line));
  expect(lines, setCookie.join('\n')).to.have.length(1);
  return lines[0]!;
}

/** The cookie expires with the pending login (10 minutes): later than now, and not a session cookie. */
function expectExpiry(attributes: string[]): void {
  const expires = attributes.find((attribute) => attribute.startsWith('expires='));
  expect(expires, attributes.join('; ')).to.be.a('string');
  expect(Date.parse(expires!.slice('expires='.length))).to.be.above(Date.now());
}

// The cookie's name and attributes, per scheme (the callback's check is test/sso/hostile.test.ts's).
describe(`single sign-on binds a login to its browser with a cookie fit for the scheme (${dialects[0]!.name})`, function () {
  this.timeout(60_000);

  describe('over HTTPS', () => {
    const s = withSso(dialects[0]!, {
      config: { sessions: { cache_ttl: '1s' }, server: { port: 0, tls: { cert: certs.server.cert, key: certs.server.key } } },
    });

    it('a __Host- cookie: Secure, HttpOnly, SameSite=Lax, Path=/, no Domain, as long as the pending login', async () => {
      expect(s.base).to.match(/^https:/);
      const setCookie = await new Promise<string[]>((resolve, reject) => {
        https
          .get(loginUrl(s.base), { ca: certs.caPem }, (response) => {
            expect(response.statusCode).to.equal(302);
            response.resume();
            resolve(response.headers['set-cookie'] ?? []);
          })
          .on('error', reject);
      });
      const cookie = loginCookie(setCookie);
      expect(cookie).to.match(/^__Host-tkgate-oidc-[\w-]{12}=[\w-]{43};/);
      const attributes = cookie.toLowerCase().split('; ').slice(1);
      expect(attributes).to.include.members(['path=/', 'secure', 'httponly', 'samesite=lax']);
      expectExpiry(attributes);
      expect(attributes.some((attribute) => attribute.startsWith('domain='))).to.equal(false);
    });
  });

  describe('over plain HTTP', () => {
    const s = withSso(dialects[0]!);

    it('the same cookie without the __Host- prefix and without Secure, which browsers refuse over HTTP', async () => {
      const response = await fetch(loginUrl(s.base), { redirect: 'manual' });
      expect(response.status).to.equal(302);
      const cookie = loginCookie(response.headers.getSetCookie());
      expect(cookie).to.match(/^tkgate-oidc-[\w-]{12}=[\w-]{43};/);
      const attributes = cookie.toLowerCase().split('; ').slice(1);
      expect(attributes).to.include.members(['path=/', 'httponly', 'samesite=lax']);
      expectExpiry(attributes);
      expect(attributes).not.to.include('secure');
    });

    it("the callback binds its login_code with a cookie of its own: HttpOnly, SameSite=Strict, Path=/, the code's 60 s", async () => {
      s.idp.addAccount({ sub: 'u-5001', claims: { preferred_username: 'cody' } });
      const { agent, callback } = await browserAtCallback(s.base, 'u-5001');
      const answer = await agent.get(callback);
      expect(answer.status).to.equal(302);
      expect(answer.headers.get('location')).to.match(/#login_code=/);
      const lines = answer.headers.getSetCookie().filter((line) => /^tkgate-login-/.test(line));
      expect(lines, answer.headers.getSetCookie().join('\n')).to.have.length(1);
      expect(lines[0]).to.match(/^tkgate-login-[\w-]{12}=[\w-]{43};/);
      const attributes = lines[0]!.toLowerCase().split('; ').slice(1);
      expect(attributes).to.include.members(['path=/', 'httponly', 'samesite=strict']);
      expect(attributes).not.to.include('secure');
      expectExpiry(attributes);
    });
  });
});

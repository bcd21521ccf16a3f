import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { withDatabase } from '../support/suite.js';
import { passwordOf, sleep } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { authClient } from '../support/http.js';

for (const dialect of dialects) {
  describe(`failed-login limit (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'mia' }, { username: 'ned' }, { username: 'ola' }, { username: 'pam' }, { username: 'quy' }]);
    let gateway: GatewayProcess | undefined;

    afterEach(async () => {
      await gateway?.stop();
    });

    const start = async (trustProxy: boolean) => {
      gateway = await startGateway({
        config: { db: s.bed.dbConfig, server: { port: 0, trust_proxy: trustProxy }, auth: { login_max_failures: 3, login_window: '2s' } },
      });
      return authClient(gateway.base);
    };

    it('answers 429 with Retry-After past the limit, even to the right password, until the window passes', async () => {
      const auth = await start(false);
      for (let i = 0; i < 3; i++) expect((await auth.login('mia', 'wrong')).status).to.equal(401);
      const limited = await auth.login('mia', passwordOf('mia'));
      expect(limited.status).to.equal(429);
      expect(limited.body.error.code).to.equal('rate_limited');
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(retryAfter).to.be.within(1, 2);
      expect(limited.body.error.details).to.deep.equal({ retry_after_s: retryAfter });
      // Another username from the same address is not affected.
      expect((await auth.login('ned', passwordOf('ned'))).status).to.equal(200);
      await sleep(2100);
      expect((await auth.login('mia', passwordOf('mia'))).status).to.equal(200);
    });

    it('lets 40 concurrent logins with the right password all in: the limit is on wrong passwords', async function () {
      this.timeout(60_000);
      const auth = await start(false);
      const replies = await Promise.all(Array.from({ length: 40 }, () => auth.login('quy', passwordOf('quy'))));
      expect(replies.map((reply) => reply.status)).to.deep.equal(Array(40).fill(200));
    });

    it('keys on the socket address and ignores X-Forwarded-For unless server.trust_proxy is set', async () => {
      const auth = await start(false);
      for (let i = 0; i < 3; i++) await auth.login('ola', 'wrong', { 'x-forwarded-for': `10.0.0.${i}` });
      expect((await auth.login('ola', passwordOf('ola'), { 'x-forwarded-for': '10.0.0.99' })).status).to.equal(429);
    });

    it('with server.trust_proxy keys on the last X-Forwarded-For entry', async () => {
      const auth = await start(true);
      for (let i = 0; i < 3; i++) await auth.login('pam', 'wrong', { 'x-forwarded-for': `1.2.3.4, 10.0.0.1` });
      expect((await auth.login('pam', passwordOf('pam'), { 'x-forwarded-for': '9.9.9.9, 10.0.0.1' })).status).to.equal(429);
      const otherClient = await auth.login('pam', passwordOf('pam'), { 'x-forwarded-for': '10.0.0.2' });
      expect(otherClient.status).to.equal(200);
    });
  });
}

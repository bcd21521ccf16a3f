import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { sleep } from '../support/fixtures.js';
import { withGateway } from '../support/suite.js';

for (const dialect of dialects) {
  describe(`session expiry (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'root', power: 100 }, { username: 'nobody-logged-in' }], {
      sessions: { idle_timeout: '1s', absolute_lifetime: '3s' },
    });
    /** A request that counts as use: an admin clearing the sessions of a user who has none. */
    const use = (token: string) => s.auth.clearSessions(token, { username: 'nobody-logged-in' });

    it('expires a session left unused past the idle timeout', async () => {
      const token = await s.login('root');
      expect((await s.auth.status(token)).status).to.equal(200);
      await sleep(1300);
      const reply = await s.auth.status(token);
      expect(reply.status).to.equal(401);
      expect(reply.body.error.code).to.equal('unauthorized');
    });

    it('does not count status calls as use', async () => {
      const token = await s.login('root');
      for (let i = 0; i < 4; i++) {
        await sleep(300);
        if (i < 2) expect((await s.auth.status(token)).status).to.equal(200);
      }
      expect((await s.auth.status(token)).status).to.equal(401);
    });

    it('slides the expiry with every use, up to the absolute lifetime', async () => {
      const token = await s.login('root');
      const started = Date.now();
      let lastOk = started;
      while (Date.now() - started < 4000) {
        await sleep(300);
        const reply = await use(token);
        if (reply.status !== 200) break;
        lastOk = Date.now();
      }
      // Alive well past the 1 s idle timeout thanks to use, ended by the 3 s absolute lifetime.
      expect(lastOk - started).to.be.within(2000, 3100);
      expect((await s.auth.status(token)).status).to.equal(401);
    });

    it('purges expired sessions from the database', async () => {
      await s.login('root');
      await sleep(2500);
      const rows = await s.bed.db('sessions').where('expires_at', '<', Date.now());
      expect(rows).to.have.length(0);
    });
  });
}

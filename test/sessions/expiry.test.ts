import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { sleep } from '../support/fixtures.js';
import { withGateway } from '../support/suite.js';

for (const dialect of dialects) {
  describe(`session expiry (${dialect.name})`, () => {
    // Timeouts of seconds, and bounds from the times each request was sent and answered: a loaded machine
    // (CI, steal time) stretches the gaps between requests, which must not read as expiry or as life.
    const s = withGateway(dialect, [{ username: 'root', power: 100 }, { username: 'nobody-logged-in' }], {
      sessions: { idle_timeout: '2s', absolute_lifetime: '5s' },
    });
    /** A request that counts as use: an admin clearing the sessions of a user who has none. */
    const use = (token: string) => s.auth.clearSessions(token, { username: 'nobody-logged-in' });

    it('expires a session left unused past the idle timeout', async () => {
      const token = await s.login('root');
      expect((await s.auth.status(token)).status).to.equal(200);
      await sleep(2600);
      const reply = await s.auth.status(token);
      expect(reply.status).to.equal(401);
      expect(reply.body.error.code).to.equal('unauthorized');
    });

    it('does not count status calls as use', async () => {
      const loginSent = Date.now();
      const token = await s.login('root');
      for (let i = 0; i < 2; i++) {
        await sleep(400);
        const sent = Date.now();
        const reply = await s.auth.status(token);
        // Only a status sent well within the idle timeout of the login must pass.
        if (sent - loginSent < 1500) expect(reply.status).to.equal(200);
      }
      await sleep(Math.max(0, loginSent + 2600 - Date.now()));
      expect((await s.auth.status(token)).status).to.equal(401);
    });

    it('slides the expiry with every use, up to the absolute lifetime', async () => {
      const loginSent = Date.now();
      const token = await s.login('root');
      const loginAnswered = Date.now();
      let lastOk = { sent: loginSent, answered: loginAnswered };
      while (Date.now() - loginSent < 7000) {
        await sleep(300);
        const sent = Date.now();
        const reply = await use(token);
        if (reply.status !== 200) break;
        lastOk = { sent, answered: Date.now() };
      }
      // Alive well past the 2 s idle timeout thanks to use; never used past the 5 s absolute lifetime.
      expect(lastOk.answered - loginSent).to.be.at.least(3500);
      expect(lastOk.sent - loginAnswered).to.be.below(5000);
      expect((await s.auth.status(token)).status).to.equal(401);
    });

    it('purges expired sessions from the database', async () => {
      await s.login('root');
      await sleep(3000); // past the idle timeout: expired; then purged within the deadline
      await eventually(
        'expired sessions purged',
        async () => ((await s.bed.db('sessions').where('expires_at', '<', Date.now())).length === 0 ? true : undefined),
        10_000,
      );
    });
  });
}

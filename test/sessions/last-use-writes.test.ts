import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { failSessionUpdates, holdSessionsLock } from '../support/db-locks.js';
import { passwordOf, sleep } from '../support/fixtures.js';
import { startGateway } from '../support/gateway-process.js';
import { authClient, loginToken } from '../support/http.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { createHash } from 'node:crypto';

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

for (const dialect of dialects) {
  describe(`last-use writes (${dialect.name})`, () => {
    const s = withGateway(
      dialect,
      [{ username: 'root', power: 100 }, { username: 'quiet' }],
      { sessions: { idle_timeout: '10s' } },
      {
        // A process of its own: the test holds SQLite locks, and an in-process gateway's synchronous busy wait would freeze the test's own loop too.
        process: true,
      },
    );
    /** A request that counts as use. */
    const use = (token: string) => s.auth.clearSessions(token, { username: 'quiet' });
    const storedLastUse = async (token: string) =>
      Number(
        (
          await s.bed
            .db('sessions')
            .where({ token_hash: sha256(token) })
            .first('last_used_at')
        )?.last_used_at,
      );

    it('writes last use only once it lags by a tenth of the idle timeout', async () => {
      const token = await s.login('root');
      const atLogin = await storedLastUse(token);
      for (let i = 0; i < 5; i++) expect((await use(token)).status).to.equal(200);
      expect(await storedLastUse(token)).to.equal(atLogin);
      await sleep(1100);
      expect((await use(token)).status).to.equal(200);
      await sleep(100);
      const later = await storedLastUse(token);
      expect(later - atLogin).to.be.at.least(1000);
      const status = (await s.auth.status(token)).body.data;
      expect(Date.parse(status.last_used_at)).to.equal(later);
    });

    it('logs a failing last-use write and still answers the request', async () => {
      const token = await s.login('root');
      const restore = await failSessionUpdates(s.bed);
      try {
        await sleep(1100);
        const reply = await use(token);
        expect(reply.status).to.equal(200);
        await sleep(200);
        const failure = s.gateway.logs.find((record) => record.msg === 'session last-use not written');
        expect(failure?.level).to.equal('error');
        expect(JSON.stringify(failure)).to.include('session writes are broken');
        // The driver's code and the hash prefix only: never the statement with the token hash inlined.
        expect(failure?.code).to.be.a('string');
        expect(failure?.session).to.equal(sha256(token).slice(0, 8));
        expect(JSON.stringify(failure)).not.to.include(sha256(token));
        expect(JSON.stringify(failure)).not.to.match(/update\s/i);
        expect((await s.auth.status(token)).status).to.equal(200);
      } finally {
        await restore();
      }
    });

    it('a logout during a slow last-use write is final', async () => {
      const token = await s.login('root');
      await sleep(1100);
      const release = await holdSessionsLock(s.bed);
      let inFlight: ReturnType<typeof use> | undefined;
      let logout: ReturnType<typeof s.auth.logout> | undefined;
      try {
        // The use queues a last-use write that waits on the lock (and so does its own clear-sessions delete).
        inFlight = use(token);
        await sleep(200);
        logout = s.auth.logout(token);
        await sleep(200);
      } finally {
        await release();
      }
      expect((await inFlight!).status).to.equal(200);
      expect((await logout!).status).to.equal(200);
      await sleep(100);
      expect((await s.auth.status(token)).status).to.equal(401);
      expect(await s.bed.db('sessions').where({ token_hash: sha256(token) })).to.have.length(0);
    });
  });

  describe(`graceful stop (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'root', power: 100 }, { username: 'quiet' }]);

    it('on SIGTERM finishes the request in flight, flushes, and exits 0', async () => {
      const gateway = await startGateway({ config: { db: s.bed.dbConfig } });
      const auth = authClient(gateway.base);
      const token = await loginToken(gateway.base, 'quiet', passwordOf('quiet'));
      const admin = await loginToken(gateway.base, 'root', passwordOf('root'));
      const release = await holdSessionsLock(s.bed);
      let inFlight: ReturnType<typeof auth.clearSessions> | undefined;
      let exited: Promise<number | string> | undefined;
      try {
        inFlight = auth.clearSessions(admin, { username: 'quiet' });
        await sleep(200);
        exited = gateway.stop('SIGTERM');
        await sleep(200);
      } finally {
        await release();
      }
      const reply = await inFlight!;
      expect(reply.status).to.equal(200);
      expect(reply.body.data.cleared).to.equal(1);
      expect(await exited).to.equal(0);
      expect(gateway.logs.map((record) => record.msg)).to.include('stopped');
      expect(await s.bed.db('sessions').where({ token_hash: sha256(token) })).to.have.length(0);
    });
  });
}

import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { passwordOf, sleep } from '../support/fixtures.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { authClient, loginToken } from '../support/http.js';
import { refuseSessionDeletes } from '../support/refused-writes.js';
import { withDatabase } from '../support/suite.js';

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

/** One configuration for every instance: room for the tests' concurrent logins, a short idle timeout. */
const MAX_FAILURES = 12;
const shared = {
  sessions: { max_per_user: 3, idle_timeout: '4s', cache_ttl: '1s' },
  auth: { login_max_failures: MAX_FAILURES, login_window: '1m' },
};

/** docs/scaling.md: several tkgate processes on one database, proved through HTTP and the CLI. */
for (const dialect of dialects) {
  describe(`several instances on one database (${dialect.name})`, function () {
    this.timeout(60_000);
    const users = ['root', 'ann', 'ben', 'cat', 'dan', 'eve', 'fay', 'gus', 'hal', 'ivy', 'jo'];
    const s = withDatabase(
      dialect,
      users.map((username) => ({ username, power: username === 'root' ? 100 : 1 })),
    );
    const gateways: GatewayProcess[] = [];
    let a: ReturnType<typeof authClient>;
    let b: ReturnType<typeof authClient>;
    /** Starts an instance; `gateways` keeps every one started, for the log dump and the final stop. */
    const start = async (db: Record<string, unknown> = s.bed.dbConfig) => {
      const gateway = await startGateway({ config: { ...shared, db } });
      gateways.push(gateway);
      return gateway;
    };
    let instanceA: GatewayProcess;
    let instanceB: GatewayProcess;
    const statusOn = async (client: ReturnType<typeof authClient>, token: string) => (await client.status(token)).status;
    const login = (gateway: GatewayProcess, username: string) => loginToken(gateway.base, username, passwordOf(username));
    const cli = (...args: string[]) => runCli([...args, '--config', writeConfig({ db: s.bed.dbConfig })], { stdin: 'another-password\n' });

    before(async () => {
      [instanceA, instanceB] = await Promise.all([start(), start()]);
      a = authClient(instanceA.base);
      b = authClient(instanceB.base);
    });
    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of gateways)
        process.stderr.write(
          `--- gateway on ${gateway.port} (exit ${gateway.child.exitCode ?? gateway.child.signalCode}):\n${gateway.output().slice(-4000)}\n`,
        );
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop()));
    });
    const [gatewayA, gatewayB] = [() => instanceA, () => instanceB];

    it('a login on A is valid on B at once', async () => {
      const token = await login(gatewayA(), 'ann');
      expect(await statusOn(b, token)).to.equal(200);
      expect((await b.status(token)).body.data.user.username).to.equal('ann');
    });

    it('a logout on A is refused by A at once and by B within cache_ttl; a logout on B ends a token of A', async () => {
      const token = await login(gatewayA(), 'ben');
      expect(await statusOn(b, token)).to.equal(200); // B has read it: B may trust that read for cache_ttl
      expect((await a.logout(token)).status).to.equal(200);
      expect(await statusOn(a, token)).to.equal(401);
      await eventually('B refuses the token', async () => (await statusOn(b, token)) === 401);

      const other = await login(gatewayA(), 'ben');
      expect(await statusOn(a, other)).to.equal(200);
      expect((await b.logout(other)).status).to.equal(200);
      expect(await statusOn(b, other)).to.equal(401);
      await eventually('A refuses the token', async () => (await statusOn(a, other)) === 401);
    });

    it('clear-sessions on A, and `tkgate sessions clear`, `user disable`, `user passwd`, end sessions used on B', async () => {
      const admin = await login(gatewayA(), 'root');
      const tokens = [await login(gatewayB(), 'cat'), await login(gatewayB(), 'cat')];
      for (const token of tokens) expect(await statusOn(b, token)).to.equal(200);
      const cleared = await a.clearSessions(admin, { username: 'cat' });
      expect(cleared.body.data).to.deep.equal({ user_id: s.ids.cat, cleared: 2 });
      for (const token of tokens) {
        expect(await statusOn(a, token)).to.equal(401);
        await eventually('B refuses a cleared token', async () => (await statusOn(b, token)) === 401);
      }

      for (const command of [
        ['sessions', 'clear', 'dan'],
        ['user', 'disable', 'dan'],
        ['user', 'passwd', 'dan', '--password-stdin'],
      ]) {
        if (command[1] !== 'disable') await cli('user', 'enable', 'dan');
        const token = command[1] === 'passwd' ? await login(gatewayB(), 'dan') : await login(gatewayA(), 'dan');
        expect(await statusOn(a, token)).to.equal(200);
        expect(await statusOn(b, token)).to.equal(200);
        const result = await cli(...command);
        expect(result.code, result.stderr).to.equal(0);
        for (const client of [a, b]) await eventually(`${command.join(' ')} is seen`, async () => (await statusOn(client, token)) === 401);
      }
    });

    it('12 concurrent logins split over A and B with a maximum of 3 leave 3 sessions that both accept', async () => {
      const tokens = await Promise.all(Array.from({ length: 12 }, (_, i) => login(i % 2 ? gatewayB() : gatewayA(), 'eve')));
      await sleep(1100); // past cache_ttl: what either instance read during the logins may no longer be trusted
      const onA = await Promise.all(tokens.map((token) => statusOn(a, token)));
      const onB = await Promise.all(tokens.map((token) => statusOn(b, token)));
      expect(onA.filter((status) => status === 200)).to.have.length(3);
      expect(onB).to.deep.equal(onA);
      const rows = await s.bed.db('sessions').where({ user_id: s.ids.eve }).pluck('token_hash');
      expect(rows.sort()).to.deep.equal(
        tokens
          .filter((_, i) => onA[i] === 200)
          .map(sha256)
          .sort(),
      );
    });

    it('a session kept in use on A only survives B (which saw it once and purges meanwhile) and a restart of A', async () => {
      const token = await login(gatewayA(), 'fay');
      expect(await statusOn(b, token)).to.equal(200);
      const use = () => a.clearSessions(token, { username: 'nobody' }); // counts as use: 403 for power 1
      const until = Date.now() + 6_000; // longer than the 4 s idle timeout; B purges every second meanwhile
      while (Date.now() < until) {
        expect((await use()).status).to.equal(403);
        await sleep(250);
      }
      expect(await statusOn(b, token)).to.equal(200);
      expect(await s.bed.db('sessions').where({ token_hash: sha256(token) })).to.have.length(1);
      // A restarts; meanwhile the session is used on B, so a slow restart cannot idle it out.
      expect(await gatewayA().stop('SIGTERM')).to.equal(0);
      let restarting = true;
      const useOnB = (async () => {
        while (restarting) {
          expect((await b.clearSessions(token, { username: 'nobody' })).status).to.equal(403);
          await sleep(250);
        }
      })();
      instanceA = await start().finally(() => (restarting = false));
      await useOnB;
      a = authClient(instanceA.base);
      expect(await statusOn(a, token)).to.equal(200);
      expect(await statusOn(b, token)).to.equal(200);
    });

    it('40 concurrent logins with the right password over A and B are all let in (the limit is on wrong passwords)', async () => {
      const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? b : a).login('jo', passwordOf('jo'))));
      expect(replies.map((reply) => reply.status)).to.deep.equal(Array(40).fill(200));
    });

    it('one failed-login limit for all instances: 60 parallel wrong logins over A and B check 12 passwords', async () => {
      const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? b : a).login('gus', 'wrong-password')));
      const statuses = replies.map((reply) => reply.status);
      expect(statuses.filter((status) => status === 401)).to.have.length(MAX_FAILURES);
      expect(statuses.filter((status) => status === 429)).to.have.length(60 - MAX_FAILURES);
      for (const reply of replies.filter((r) => r.status === 429)) {
        expect(reply.body.error.code).to.equal('rate_limited');
        expect(Number(reply.headers.get('retry-after'))).to.be.within(1, 60);
      }
      for (const client of [a, b]) expect((await client.login('gus', passwordOf('gus'))).status).to.equal(429);
      expect((await b.login('hal', passwordOf('hal'))).status).to.equal(200);
    });

    it('a refused delete answers 503 unavailable and changes nothing; a retry ends the session', async () => {
      const refused = await refuseSessionDeletes(s.bed);
      try {
        const gatewayC = await start(refused.dbConfig);
        const c = authClient(gatewayC.base);
        const admin = await login(gatewayA(), 'root');
        const token = await login(gatewayC, 'ivy');
        const logout = await c.logout(token);
        expect(logout.status).to.equal(503);
        expect(logout.body.error.code).to.equal('unavailable');
        expect(logout.headers.get('retry-after')).to.equal('1');
        const clear = await c.clearSessions(admin, { username: 'ivy' });
        expect(clear.status).to.equal(503);
        expect(clear.body.error.code).to.equal('unavailable');
        await sleep(1100); // past cache_ttl: every instance answers from the database
        for (const client of [a, b, c]) expect(await statusOn(client, token)).to.equal(200);
        expect(gatewayC.output()).not.to.include(sha256(token));

        await refused.allow();
        expect((await c.logout(token)).status).to.equal(200);
        expect(await statusOn(c, token)).to.equal(401);
        for (const client of [a, b]) await eventually('the retried logout is seen', async () => (await statusOn(client, token)) === 401);
        expect(await s.bed.db('sessions').where({ token_hash: sha256(token) })).to.have.length(0);
      } finally {
        await refused.drop();
      }
    });
  });
}

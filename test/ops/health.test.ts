import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { eventually } from '../support/ops.js';
import { startPrivateMariadb, type PrivateMariadb } from '../support/private-mariadb.js';
import { refuseWrites, type RefusedWrites } from '../support/refused-writes.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { tempDir } from '../support/paths.js';

const root = (gateway: GatewayProcess) => `http://127.0.0.1:${gateway.port}`;

for (const dialect of dialects) {
  describe(`health and readiness (${dialect.name})`, () => {
    // shutdown_delay: on SIGTERM the gateway keeps serving this long with /readyz 503, then drains.
    const s = withGateway(dialect, [], { server: { port: 0, shutdown_delay: '5s' } }, { process: true }); // SIGTERM and the exit code;

    it('answers /healthz and /readyz at the root, without auth, and not under base_url', async () => {
      const health = await call('GET', `${root(s.gateway)}/healthz`);
      expect(health.status).to.equal(200);
      expect(health.body).to.deep.equal({ status: 'ok' });
      const ready = await call('GET', `${root(s.gateway)}/readyz`);
      expect(ready.status).to.equal(200);
      expect(ready.body).to.deep.equal({ status: 'ready', checks: { database: 'ok', toolkits: 'ok', draining: 'ok' } });
      expect((await call('GET', `${s.gateway.base}/healthz`)).status).to.equal(404);
    });

    it('answers /readyz 503 naming the drain once SIGTERM arrived, while /healthz stays 200, then exits 0', async () => {
      const exited = s.gateway.stop('SIGTERM');
      const draining = await eventually('/readyz 503 after SIGTERM', async () => {
        const reply = await call('GET', `${root(s.gateway)}/readyz`);
        return reply.status === 503 ? reply : undefined;
      });
      expect(draining.body).to.deep.include({ status: 'draining', failing: ['draining'] });
      expect(draining.body.checks.database).to.equal('ok');
      expect((await call('GET', `${root(s.gateway)}/healthz`)).status).to.equal(200);
      s.gateway.child.kill('SIGTERM'); // a second SIGTERM changes nothing: the drain goes on and ends in exit 0
      expect(await exited).to.equal(0);
    });
  });
}

describe('readiness with the database gone (a private MariaDB paused, then killed)', function () {
  this.timeout(120_000);
  let mariadb: PrivateMariadb | undefined;
  let gateway: GatewayProcess | undefined;
  const readyz = () => call('GET', `${root(gateway!)}/readyz`);

  before(async () => {
    mariadb = await startPrivateMariadb();
    gateway = await startGateway({ cwd: tempDir(), config: { db: { client: 'mysql', url: mariadb.url }, toolkits: { dir: tempDir(), watch: false } } });
  });
  after(async () => {
    mariadb?.resume();
    await mariadb?.kill();
    await gateway?.stop();
  });

  it('is 503 naming the database while it does not answer within 1 s, ready again once it does, 503 once it is gone', async () => {
    expect((await readyz()).status).to.equal(200);
    await mariadb!.pause();
    // SIGSTOP takes effect when the kernel next schedules the server: a probe already on its way may still be answered.
    const hanging = await eventually('/readyz 503 while the database is paused', async () => {
      const reply = await readyz();
      return reply.status === 503 ? reply : undefined;
    });
    expect(hanging.body).to.deep.equal({
      status: 'unready',
      failing: ['database'],
      checks: { database: 'no answer within 1s', toolkits: 'ok', draining: 'ok' },
    });
    expect((await call('GET', `${root(gateway!)}/healthz`)).status).to.equal(200);

    mariadb!.resume();
    await eventually('/readyz 200 once the database answers again', async () => ((await readyz()).status === 200 ? true : undefined));

    await mariadb!.kill();
    const gone = await eventually('/readyz 503 once the database is gone', async () => {
      const reply = await readyz();
      return reply.status === 503 ? reply : undefined;
    });
    expect(gone.body.failing).to.deep.equal(['database']);
    expect(gone.body.checks.database).to.be.oneOf(['unreachable', 'no answer within 1s']);
    expect(JSON.stringify(gone.body)).not.to.match(/ECONNREFUSED|127\.0\.0\.1/);
  });
});

/** A database that answers reads but refuses writes makes /readyz 503 (refused-writes.ts). */
for (const dialect of dialects) {
  describe(`readiness of a database that refuses writes (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withDatabase(dialect, []);
    let refused: RefusedWrites;
    let gateway: GatewayProcess | undefined;
    before(async () => {
      refused = await refuseWrites(s.bed);
      gateway = await startGateway({ config: { db: refused.dbConfig } });
    });
    after(async () => {
      await gateway?.stop();
      await refused?.drop();
    });

    it('is 503 naming the database as refusing writes while it does, and ready again once it writes', async () => {
      const readyz = () => call('GET', `${root(gateway!)}/readyz`);
      expect((await readyz()).status).to.equal(200);
      await refused.refuse();
      const refusing = await eventually('/readyz 503 while writes are refused', async () => {
        const reply = await readyz();
        return reply.status === 503 ? reply : undefined;
      });
      expect(refusing.body).to.deep.equal({
        status: 'unready',
        failing: ['database'],
        checks: { database: 'refuses writes', toolkits: 'ok', draining: 'ok' },
      });
      // The line reaches this process through the child's stdout, which may come after the answer.
      await eventually('the readiness failure logged', () => gateway!.logs.some((line) => line.msg === 'readiness: database check failed'));
      await refused.allow();
      await eventually('/readyz 200 once writes go through again', async () => ((await readyz()).status === 200 ? true : undefined));
    });
  });
}

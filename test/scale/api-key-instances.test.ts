import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { apiKeyClient, apiKeyOf, authClient, loginToken } from '../support/http.js';
import { withDatabase } from '../support/suite.js';

/** A small cache_ttl: how long an instance may trust what it read about a key and its owner. */
const shared = { sessions: { cache_ttl: '500ms' } };

/**
 * API keys (docs/api-keys.md) on several instances (docs/scaling.md): two real `tkgate start` processes on one database. A key revoked, expired or
 * whose owner is disabled anywhere is refused by every instance within sessions.cache_ttl (by the instance
 * that revoked it, at once).
 */
for (const dialect of dialects) {
  describe(`API keys on several instances (${dialect.name})`, function () {
    this.timeout(90_000);
    const s = withDatabase(dialect, [
      { username: 'ann', power: 10 },
      { username: 'bob', power: 10 },
      { username: 'cat', power: 10 },
    ]);
    const gateways: GatewayProcess[] = [];
    let a: ReturnType<typeof authClient>;
    let b: ReturnType<typeof authClient>;
    const cli = (...args: string[]) => runCli([...args, '--config', writeConfig({ ...shared, db: s.bed.dbConfig })]);
    const statusOn = async (client: ReturnType<typeof authClient>, key: string) => (await client.status(key)).status;
    const bothAccept = async (key: string) => {
      expect(await statusOn(a, key)).to.equal(200);
      expect(await statusOn(b, key)).to.equal(200);
    };
    const bothRefuse = async (what: string, key: string) => {
      for (const [name, client] of [
        ['A', a],
        ['B', b],
      ] as const)
        await eventually(`${name} refuses the key (${what})`, async () => (await statusOn(client, key)) === 401, 20_000);
    };

    before(async () => {
      gateways.push(
        ...(await Promise.all([startGateway({ config: { ...shared, db: s.bed.dbConfig } }), startGateway({ config: { ...shared, db: s.bed.dbConfig } })])),
      );
      a = authClient(gateways[0]!.base);
      b = authClient(gateways[1]!.base);
    });
    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of gateways) process.stderr.write(`--- gateway on ${gateway.port}:\n${gateway.output().slice(-4000)}\n`);
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop()));
    });

    it('a key made on A works on B at once; revoked on A, A refuses it at once and B within cache_ttl', async () => {
      const session = await loginToken(gateways[0]!.base, 'ann', passwordOf('ann'));
      const { key, id } = await apiKeyOf(gateways[0]!.base, session, { name: 'two-instances' });
      await bothAccept(key); // B has read it now, and may trust that read for cache_ttl
      const revoked = await apiKeyClient(gateways[0]!.base).revoke(session, id);
      expect(revoked.status).to.equal(200);
      expect(await statusOn(a, key)).to.equal(401);
      await bothRefuse('revoked over HTTP on A', key);
    });

    it('`tkgate apikey revoke` and `tkgate user disable` reach both running instances', async () => {
      const created = await cli('apikey', 'create', 'bob', '--name', 'by-cli');
      expect(created.code, created.stderr).to.equal(0);
      const [key, summary] = created.stdout.split('\n');
      const id = /api key ([0-9a-f]{16}) created/.exec(summary!)![1]!;
      await bothAccept(key!);
      const revoked = await cli('apikey', 'revoke', id);
      expect(revoked.code, revoked.stderr).to.equal(0);
      await bothRefuse('tkgate apikey revoke', key!);

      const other = (await cli('apikey', 'create', 'cat', '--name', 'owner-disabled')).stdout.split('\n')[0]!;
      await bothAccept(other);
      const disabled = await cli('user', 'disable', 'cat');
      expect(disabled.code, disabled.stderr).to.equal(0);
      await bothRefuse('owner disabled', other);
    });

    it('an expiring key is refused by both instances once expired', async () => {
      const session = await loginToken(gateways[1]!.base, 'ann', passwordOf('ann'));
      const { key } = await apiKeyOf(gateways[1]!.base, session, { name: 'brief', expires_in: '5s' });
      await bothAccept(key);
      await bothRefuse('expired', key);
    });
  });
}

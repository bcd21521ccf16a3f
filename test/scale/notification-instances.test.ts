import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call, loginToken, toolkitClient } from '../support/http.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { signingKey, standardSink, verified, WebhookReceiver } from '../support/webhook-receiver.js';

const script = scriptWriter('tkgate-notify-scale-bin-');
const fails = script('fails', 'exit 1');
const KEY = signingKey();
let holding = true;
const receiver = new WebhookReceiver({ '/ok': () => 200, '/held': () => (holding ? 'hang' : 200) });
await receiver.start();

const toolkits = toolkitDir({
  'ops.yaml': {
    name: 'ops',
    type: 'app',
    endpoints: [
      { path: 'fails', method: 'POST', type: 'exec', run: 'async', command: [fails], max_concurrency: 20, notify: [{ on: ['run.failed'], sink: 'hooks' }] },
      { path: 'held', method: 'POST', type: 'exec', run: 'async', command: [fails], notify: [{ on: ['run.failed'], sink: 'held' }] },
    ],
  },
});
const sink = (name: string, where: string, extra: Record<string, unknown> = {}) => standardSink(name, receiver.url(where), 'NOTIFY_SCALE_KEY', extra);
const shared = {
  toolkits: { dir: toolkits, watch: false },
  notifications: { sinks: [sink('hooks', '/ok'), sink('held', '/held', { timeout: '2s' })], retry_base: '100ms' },
};

/**
 * Notifications on several instances (docs/notifications.md, "Never lost"): real tkgate processes on one database.
 * A gateway killed while its first attempt is under way delivers after its restart, once; three instances deliver
 * every event of a burst exactly once to a healthy receiver.
 */
for (const dialect of dialects) {
  describe(`notifications on several instances (${dialect.name})`, function () {
    this.timeout(120_000);
    const s = withDatabase(dialect, [{ username: 'ann', power: 10 }]);
    const gateways: GatewayProcess[] = [];
    const start = async () => {
      const gateway = await startGateway({ config: { ...shared, db: s.bed.dbConfig }, env: { NOTIFY_SCALE_KEY: KEY } });
      gateways.push(gateway);
      return gateway;
    };
    let token: string;
    const ask = async (gateway: GatewayProcess, endpoint: string) => {
      const reply = await toolkitClient(gateway.base, token).post('ops', endpoint, {});
      expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
      return reply.body.data.run_id as string;
    };
    const deliveryOf = async (runId: string) =>
      (
        await s.bed
          .db('notification_deliveries as d')
          .join('notification_events as e', 'e.id', 'd.event_id')
          .where('e.run_id', runId)
          .select('d.id', 'd.status')
      )[0] as { id: string; status: string } | undefined;

    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of gateways) process.stderr.write(`--- gateway ${gateway.child.pid}:\n${gateway.output().slice(-4000)}\n`);
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    });

    it('SIGKILL while the first attempt of a committed event is under way: delivered after the restart, once', async () => {
      holding = true;
      const first = await start();
      token = await loginToken(first.base, 'ann', passwordOf('ann'));
      const id = await ask(first, 'held');
      const request = await eventually('the first attempt reaches the receiver', () => receiver.at('/held').find((entry) => entry.body.includes(id)));
      expect(await first.stop('SIGKILL')).to.equal('SIGKILL');
      expect((await deliveryOf(id))?.status).to.equal('pending');
      holding = false;
      await start();
      const delivered = await eventually(
        'the delivery after the restart',
        async () => ((await deliveryOf(id))?.status === 'delivered' ? deliveryOf(id) : undefined),
        30_000,
      );
      const attempts = await s.bed.db('notification_attempts').where({ delivery_id: delivered!.id }).select('status_code');
      expect(attempts.map((row) => Number(row.status_code))).to.deep.equal([200]);
      const answered = receiver.at('/held').filter((entry) => entry.headers['webhook-id'] === request.headers['webhook-id'] && entry.answered === 200);
      expect(answered).to.have.length(1);
      verified(KEY, answered[0]!);
    });

    it('three instances: every event of a burst delivered exactly once', async () => {
      while (gateways.filter((gateway) => gateway.child.exitCode === null && gateway.child.signalCode === null).length < 3) await start();
      const live = gateways.filter((gateway) => gateway.child.exitCode === null && gateway.child.signalCode === null);
      const ids = await Promise.all(Array.from({ length: 24 }, (_, i) => ask(live[i % live.length]!, 'fails')));
      await eventually(
        'every event delivered',
        async () => {
          const rows = await s.bed
            .db('notification_events as e')
            .join('notification_deliveries as d', 'd.event_id', 'e.id')
            .whereIn('e.run_id', ids)
            .select('d.status');
          return rows.length === ids.length && rows.every((row) => row.status === 'delivered');
        },
        60_000,
      );
      const received = receiver.at('/ok').filter((entry) => ids.some((id) => entry.body.includes(id)));
      expect(received).to.have.length(ids.length);
      expect(new Set(received.map((entry) => entry.headers['webhook-id'])).size).to.equal(ids.length);
      for (const id of ids) expect(received.filter((entry) => entry.body.includes(id))).to.have.length(1);
      const attempts = await s.bed.db('notification_attempts').count({ n: '*' }).first();
      // The held delivery's one attempt and one per event of the burst: no instance attempted one twice.
      expect(Number(attempts?.n)).to.equal(ids.length + 1);
      // The log answers from any instance.
      const listed = await call('GET', `${live[1]!.base}/admin/notifications?sink=hooks&limit=200`, { token });
      expect(listed.status).to.equal(403);
    });
  });
}

after(() => receiver.stop());

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { writeConfig } from '../support/gateway-process.js';
import { call, toolkitClient } from '../support/http.js';
import { scrape, valueOf } from '../support/ops.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { signingKey, standardSink, verified, WebhookReceiver, type Received } from '../support/webhook-receiver.js';

const script = scriptWriter('tkgate-notify-bin-');
const flags = tempDir('tkgate-notify-flags-');
/** Prints the secret it was given (masked in its output) and fails. */
const leaks = script('leaks', 'echo "token=$TOKEN"; exit 3');
const succeeds = script('succeeds', 'echo done');
/** Exits with the code in $FLAGS/code: the test decides each run's outcome. */
const decided = script('decided', 'exit "$(cat "$FLAGS/code")"');
const PLANTED = 'planted-secret-5c1e9a';
const KEY = signingKey();
process.env.NOTIFY_TEST_TOKEN = PLANTED;
process.env.NOTIFY_TEST_KEY = KEY;

const job = (pathName: string, command: string, notify: unknown[] | undefined, extra: Record<string, unknown> = {}) => ({
  path: pathName,
  method: 'POST',
  type: 'exec',
  run: 'async',
  command: [command],
  ...(notify ? { notify } : {}),
  ...extra,
});

const receiver = new WebhookReceiver({
  '/ok': () => 200,
  '/slack': () => 200,
  '/flaky': (n) => (n <= 2 ? 500 : 200),
  '/hang': () => 'hang',
  '/redirect': () => 302,
  '/sched': () => 200,
});
await receiver.start();

const sink = (name: string, where: string, extra: Record<string, unknown> = {}) => standardSink(name, receiver.url(where), 'NOTIFY_TEST_KEY', extra);

/** Notifications (docs/notifications.md) end to end: a real receiver verifying with the Standard Webhooks library. */
for (const dialect of dialects) {
  describe(`notifications: run events delivered, signed, retried (${dialect.name})`, function () {
    this.timeout(60_000);
    const toolkits = toolkitDir({
      'ops.yaml': {
        name: 'ops',
        type: 'app',
        notify: [{ on: ['run.failed'], sink: 'hooks' }],
        endpoints: [
          job(
            'leaks',
            leaks,
            [
              { on: ['run.failed'], sink: 'hooks' },
              { on: ['run.failed'], sink: 'slack' },
            ],
            {
              env: { TOKEN: { secret: 'env:NOTIFY_TEST_TOKEN' } },
              client_filter: { allowed_fields: ['password'] },
            },
          ),
          job('flaky', succeeds, [{ on: ['run.succeeded'], sink: 'flaky' }]),
          job('hang', succeeds, [{ on: ['run.succeeded'], sink: 'hang' }]),
          job('redirect', succeeds, [{ on: ['run.succeeded'], sink: 'redirect' }]),
          job('streak', decided, [{ on: ['run.failed'], sink: 'hooks', after_consecutive_failures: 3, on_recovery: true }], { env: { FLAGS: flags } }),
          job('approve', succeeds, [{ on: ['run.awaiting_approval'], sink: 'hooks' }], { approval: { approvers: { min_power: 50 } } }),
          job('inherits', leaks, undefined, { env: { TOKEN: 'x' } }),
          job('quiet', succeeds, []),
          // Its schedule acts as a user that does not exist: every fire fails, and says so (docs/schedules.md).
          job('nightly', succeeds, [{ on: ['schedule.failed', 'schedule.missed'], sink: 'sched' }], {
            schedule: [{ name: 'orphan', cron: '*/2 * * * * *', as: 'nobody-here' }],
          }),
        ],
      },
    });
    const s = withGateway(
      dialect,
      [
        { username: 'ann', power: 10 },
        { username: 'root', power: 100 },
      ],
      {
        server: { public_url: 'https://gw.example.org' },
        notifications: {
          sinks: [
            sink('hooks', '/ok', { headers: { 'X-Team': 'ops' } }),
            { name: 'slack', url: receiver.url('/slack'), format: 'slack' },
            sink('flaky', '/flaky'),
            sink('hang', '/hang', { timeout: '300ms' }),
            sink('redirect', '/redirect'),
            sink('sched', '/sched'),
          ],
          retry_base: '50ms',
          max_attempts: 3,
        },
      },
      { toolkitsDir: toolkits },
    );
    let ann: string;
    let root: string;
    before(async () => {
      ann = await s.login('ann');
      root = await s.login('root');
    });

    const runOf = async (endpoint: string, body: Record<string, unknown> = {}) => {
      const reply = await toolkitClient(s.gateway.base, ann).post('ops', endpoint, body);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
      return reply.body.data.run_id as string;
    };
    const forRun = (where: string, id: string, count = 1) =>
      eventually(`${count} request(s) for run ${id} at ${where}`, () => {
        const found = receiver.at(where).filter((entry) => entry.body.includes(id));
        return found.length >= count && found.every((entry) => entry.answered !== null || where === '/hang') ? found : undefined;
      });
    const deliveries = async (query = '') => {
      const reply = await call('GET', `${s.gateway.base}/admin/notifications${query}`, { token: root });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body.data.deliveries as Array<Record<string, any>>;
    };
    const deliveryOf = (id: string, sinkName: string, done = (d: Record<string, any>) => d.status !== 'pending') =>
      eventually(`the ${sinkName} delivery of run ${id}`, async () =>
        (await deliveries(`?sink=${sinkName}&limit=200`)).find((d) => d.run_id === id && done(d)),
      );

    it("a schedule's failed fire is delivered as schedule.failed, signed, with the fire and its reason", async () => {
      // The receiver serves every database's suite: the event is one of a fire in this suite's database.
      const [hook, fire] = await eventually(
        'a schedule.failed event of a fire in this database',
        async () => {
          for (const entry of receiver.at('/sched')) {
            const delivery = await s.bed
              .db('notification_deliveries')
              .where({ id: String(entry.headers['webhook-id']) })
              .first();
            if (!delivery) continue;
            const fireAt = Date.parse(JSON.parse(entry.body).data.schedule.fire_at);
            const row = await s.bed.db('schedule_fires').where({ schedule_id: 'ops/nightly#orphan', fire_at: fireAt }).first();
            if (row) return [entry, row] as const;
          }
          return undefined;
        },
        15_000,
      );
      const body = verified(KEY, hook) as any;
      expect(body.type).to.equal('schedule.failed');
      expect(body.data.schedule).to.include({ id: 'ops/nightly#orphan', toolkit: 'ops', endpoint: 'nightly' });
      expect(body.data.schedule.reason).to.include('nobody-here');
      expect(fire).to.include({ outcome: 'failed' });
    });

    it('a failed run reaches a webhook signed as Standard Webhooks and a Slack message; no secret value or payload in either', async () => {
      const id = await runOf('leaks', { password: PLANTED });
      const [hook] = await forRun('/ok', id);
      const body = verified(KEY, hook!) as any;
      expect(hook!.headers['x-team']).to.equal('ops');
      expect(hook!.headers['webhook-id']).to.match(/^msg_[0-9a-f]{32}$/);
      expect(body.type).to.equal('run.failed');
      expect(body.data.run).to.include({ id, toolkit: 'ops', endpoint: 'leaks', status: 'failed', exit_code: 3 });
      expect(body.data.run.actor).to.include({ username: 'ann' });
      expect(body.data.links).to.deep.equal({
        run: `https://gw.example.org/api/runs/${id}`,
        console: `https://gw.example.org/api/console/#/runs/${id}`,
      });
      const [slack] = await forRun('/slack', id);
      const message = JSON.parse(slack!.body);
      expect(message.text).to.include(id).and.include('failed').and.include('ann');
      expect(message.blocks[0].text.text).to.include(`<https://gw.example.org/api/console/#/runs/${id}|open>`);
      for (const entry of [...receiver.received, hook!, slack!]) expect(entry.body).not.to.include(PLANTED);
      const listed = await deliveryOf(id, 'hooks');
      expect(listed).to.include({ status: 'delivered', event: 'run.failed', webhook_id: hook!.headers['webhook-id'] });
      expect(listed!.attempts).to.have.length(1);
      expect(listed!.attempts[0]).to.include({ status_code: 200, error: null });
    });

    it('500 twice then 200: three attempts, one webhook-id, each signed; the log shows them; a redeliver sends the same id again', async () => {
      const id = await runOf('flaky');
      const requests = await forRun('/flaky', id, 3);
      expect(new Set(requests.map((entry) => entry.headers['webhook-id'])).size).to.equal(1);
      for (const entry of requests) expect((verified(KEY, entry) as any).data.run.id).to.equal(id);
      expect(requests.map((entry) => entry.answered)).to.deep.equal([500, 500, 200]);
      const delivery = await deliveryOf(id, 'flaky');
      expect(delivery.status).to.equal('delivered');
      expect(delivery.attempts.map((attempt: any) => attempt.status_code)).to.deep.equal([500, 500, 200]);
      for (const attempt of delivery.attempts) expect(attempt.duration_ms).to.be.a('number');

      const denied = await call('POST', `${s.gateway.base}/admin/notifications/${delivery.id}/redeliver`, { token: ann });
      expect(denied.status).to.equal(403);
      const missing = await call('POST', `${s.gateway.base}/admin/notifications/msg_${'0'.repeat(32)}/redeliver`, { token: root });
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('delivery_not_found');
      const again = await call('POST', `${s.gateway.base}/admin/notifications/${delivery.id}/redeliver`, { token: root });
      expect(again.status, JSON.stringify(again.body)).to.equal(202);
      const four = await forRun('/flaky', id, 4);
      expect(four[3]!.headers['webhook-id']).to.equal(delivery.webhook_id);
      verified(KEY, four[3]!);
    });

    it('a receiver that never answers: each attempt recorded as a timeout, then failed after max_attempts', async () => {
      const id = await runOf('hang');
      const delivery = await deliveryOf(id, 'hang');
      expect(delivery.status).to.equal('failed');
      expect(delivery.attempts).to.have.length(3);
      for (const attempt of delivery.attempts) expect(attempt).to.include({ status_code: null, error: 'no answer within 300 ms' });
    });

    it('a redirect is not followed: its status recorded, the target never asked', async () => {
      const id = await runOf('redirect');
      const delivery = await deliveryOf(id, 'redirect');
      expect(delivery.status).to.equal('failed');
      expect(delivery.attempts[0]).to.include({ status_code: 302, error: 'redirect not followed' });
      expect(receiver.at('/elsewhere')).to.have.length(0);
    });

    it('after_consecutive_failures: 3 sends the third failure only, on_recovery the success after it', async () => {
      const outcome = async (code: number) => {
        writeFileSync(path.join(flags, 'code'), String(code));
        const id = await runOf('streak');
        await eventually(`run ${id} ends`, async () => {
          const run = (await call('GET', `${s.gateway.base}/runs/${id}`, { token: root })).body.data;
          return ['succeeded', 'failed'].includes(run.status) ? run : undefined;
        });
        return id;
      };
      const ids = [await outcome(1), await outcome(1), await outcome(1), await outcome(1), await outcome(0)];
      const [sent] = await forRun('/ok', ids[2]!);
      expect((verified(KEY, sent!) as any).type).to.equal('run.failed');
      const [recovered] = await forRun('/ok', ids[4]!);
      expect((verified(KEY, recovered!) as any).type).to.equal('run.recovered');
      const events = (await deliveries('?sink=hooks&limit=200')).filter((d) => ids.includes(d.run_id));
      expect(events.map((d) => [ids.indexOf(d.run_id), d.event]).sort()).to.deep.equal([
        [2, 'run.failed'],
        [4, 'run.recovered'],
      ]);
    });

    it('run.awaiting_approval from an approval endpoint; a toolkit rule for an endpoint without its own; none for an endpoint with notify: []', async () => {
      const waiting = await runOf('approve');
      const [asked] = await forRun('/ok', waiting);
      const body = verified(KEY, asked!) as any;
      expect(body.type).to.equal('run.awaiting_approval');
      expect(body.data.run.status).to.equal('awaiting_approval');
      const inherited = await runOf('inherits');
      expect((verified(KEY, (await forRun('/ok', inherited))[0]!) as any).type).to.equal('run.failed');
      const quiet = await runOf('quiet');
      await eventually('the quiet run ends', async () =>
        (await call('GET', `${s.gateway.base}/runs/${quiet}`, { token: root })).body.data.status === 'succeeded' ? true : undefined,
      );
      expect(await s.bed.db('notification_events').where({ run_id: quiet }).count({ n: '*' }).first()).to.satisfy((row: any) => Number(row.n) === 0);
    });

    it('filters are checked (400 naming the field), admins only (403); metrics count outcomes; the CLI lists and redelivers', async () => {
      const bad = await call('GET', `${s.gateway.base}/admin/notifications?status=sent&limit=0`, { token: root });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.code).to.equal('invalid_payload');
      expect(bad.body.error.details.map((d: any) => d.field).sort()).to.deep.equal(['limit', 'status']);
      expect((await call('GET', `${s.gateway.base}/admin/notifications`, { token: ann })).status).to.equal(403);
      const page = await call('GET', `${s.gateway.base}/admin/notifications?limit=1`, { token: root });
      expect(page.body.data.deliveries).to.have.length(1);
      const next = await call('GET', `${s.gateway.base}/admin/notifications?limit=1&cursor=${page.body.data.next_cursor}`, { token: root });
      expect(next.body.data.deliveries[0].id).not.to.equal(page.body.data.deliveries[0].id);

      const { samples } = await scrape(s.gateway);
      expect(valueOf(samples, 'tkgate_notifications_total', { sink: 'hooks', outcome: 'delivered' })).to.be.greaterThan(0);
      expect(valueOf(samples, 'tkgate_notifications_total', { sink: 'flaky', outcome: 'retried' })).to.be.at.least(2);
      expect(valueOf(samples, 'tkgate_notifications_pending')).to.be.a('number');

      const config = writeConfig({ db: s.bed.dbConfig });
      const listed = await runCli(['notifications', 'list', '--status', 'failed', '--config', config]);
      expect(listed.code, listed.stderr).to.equal(0);
      expect(listed.stdout).to.include('redirect not followed');
      const wrong = await runCli(['notifications', 'list', '--status', 'sent', '--config', config]);
      expect(wrong.code).to.not.equal(0);
      const [one] = await deliveries('?sink=hooks&status=delivered&limit=1');
      const before: Received[] = receiver.received.filter((entry) => entry.headers['webhook-id'] === one!.id);
      const again = await runCli(['notifications', 'redeliver', one!.id, '--config', config]);
      expect(again.code, again.stderr).to.equal(0);
      await eventually(
        'the redelivered request',
        () => receiver.received.filter((entry) => entry.headers['webhook-id'] === one!.id).length > before.length || undefined,
      );
    });
  });
}

after(() => receiver.stop());

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects, postgresAdmin } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call, loginToken } from '../support/http.js';
import { SseFollower } from '../support/sse-client.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { runCalls, runCommands } from './run-commands.js';

const { marks, ticker } = runCommands('tkgate-runs-wakeups');
const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [{ path: 'ticker', method: 'POST', type: 'exec', run: 'async', command: [ticker], env: { MARKS: marks }, max_concurrency: 4 }],
};
/** Polling so slow that only a wake-up can move a run within the deadlines below. */
const POLL_INTERVAL = '60s';
/** Well under the poll interval, generous for a loaded machine. */
const DEADLINE_MS = 30_000;

/**
 * Wake-ups (docs/runs.md, "Claims and wake-ups"): with runs.poll_interval at a minute, a run queued on an instance
 * without room starts on an idle one, a line it prints reaches a follower on the first, and a cancel asked there
 * reaches the instance running it, all long before any poll: LISTEN/NOTIFY on PostgreSQL (runs.wakeups auto),
 * Redis publish/subscribe on MariaDB and SQLite (runs.wakeups redis).
 */
for (const dialect of dialects) {
  const wakeups = dialect.name === 'postgres' ? { runs: { wakeups: 'auto' } } : { runs: { wakeups: 'redis' }, redis: { url: 'redis://127.0.0.1:6379/0' } };
  describe(`runs: wake-ups between instances (${dialect.name}, ${wakeups.runs.wakeups === 'auto' ? 'LISTEN/NOTIFY' : 'Redis'})`, function () {
    this.timeout(120_000);
    const s = withDatabase(dialect, [{ username: 'ann', power: 10 }]);
    const gateways: GatewayProcess[] = [];
    let token: string;
    const { ask, ended } = runCalls(() => token, DEADLINE_MS);
    const start = async (maxProcesses: number) => {
      const gateway = await startGateway({
        config: {
          db: s.bed.dbConfig,
          toolkits: { dir: toolkitDir({ 'ops.yaml': ops }), watch: false },
          runs: { ...wakeups.runs, poll_interval: POLL_INTERVAL, cancel_grace: '300ms', drain_timeout: '1s' },
          ...(wakeups.redis && { redis: wakeups.redis }),
          plugin_options: { '@tkgate/plugin-exec': { max_processes: maxProcesses } },
        },
      });
      gateways.push(gateway);
      await eventually('its wake-ups listen', () => gateway.logs.some((line) => String(line.msg).startsWith('run wake-ups')), DEADLINE_MS);
      return gateway;
    };
    const parentOf = async (id: string) => {
      const file = path.join(marks, `${id}.gateway`);
      await eventually('the command runs', () => existsSync(file) && readFileSync(file, 'utf8').trim() !== '', DEADLINE_MS);
      return Number(readFileSync(file, 'utf8'));
    };

    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of gateways) process.stderr.write(`--- gateway ${gateway.child.pid}:\n${gateway.output().slice(-3000)}\n`);
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    });

    it('starts a queued run on an idle instance, follows its lines and cancels it from another, each well before a poll', async () => {
      // The full one: its one process taken by a run of its own.
      const full = await start(1);
      token = await loginToken(full.base, 'ann', passwordOf('ann'));
      const holding = await ask(full, 'ticker');
      expect(await parentOf(holding)).to.equal(full.child.pid);
      // The idle one: started after, its first look (at start) finds nothing waiting.
      const idle = await start(4);

      const id = await ask(full, 'ticker');
      expect(await parentOf(id), 'the idle instance runs it').to.equal(idle.child.pid);

      const follower = new SseFollower(`${full.base}/runs/${id}/output`, { token });
      await eventually('lines reach a follower on the other instance', () => follower.events.length >= 3, DEADLINE_MS);

      expect((await call('POST', `${full.base}/runs/${id}/cancel`, { token })).status).to.equal(202);
      expect(await ended(idle, id)).to.include({ status: 'cancelled', reason: 'cancelled_by' });
      await follower.done;
      expect(follower.events.at(-1)!.event).to.equal('end');
      expect(JSON.parse(follower.events.at(-1)!.data)).to.deep.equal({ status: 'cancelled', exit_code: null });
    });

    if (dialect.name === 'postgres')
      it('listens again after its connection is ended, and wake-ups work again', async () => {
        const [full, idle] = gateways as [GatewayProcess, GatewayProcess];
        const database = new URL(String(s.bed.dbConfig.url)).pathname.slice(1);
        const listeners = () =>
          postgresAdmin(async (client) =>
            (
              await client.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = 'tkgate-listener' AND datname = $1", [database])
            ).rows.map((row) => row.pid),
          );
        const before = await listeners();
        expect(before).to.have.length(2);
        await postgresAdmin((client) => client.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [before]));
        await eventually(
          'both listen again',
          async () => {
            const now = await listeners();
            return now.length === 2 && now.every((pid) => !before.includes(pid));
          },
          DEADLINE_MS,
        );
        const id = await ask(full, 'ticker');
        expect(await parentOf(id), 'the idle instance runs it').to.equal(idle.child.pid);
        expect((await call('POST', `${full.base}/runs/${id}/cancel`, { token })).status).to.equal(202);
        expect(await ended(idle, id)).to.include({ status: 'cancelled' });
      });
  });
}

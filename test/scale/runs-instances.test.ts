import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { alive } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call, loginToken } from '../support/http.js';
import { SseFollower } from '../support/sse-client.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { ENDED, runCalls, runCommands } from './run-commands.js';

const { marks, ticker, lasting, serial, once } = runCommands('tkgate-runs-scale');

const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    { path: 'ticker', method: 'POST', type: 'exec', run: 'async', command: [ticker], env: { MARKS: marks } },
    { path: 'keyed', method: 'POST', type: 'exec', run: 'async', command: [ticker], env: { MARKS: marks }, concurrency_key: '$payload.service' },
    // Ends by itself inside the drain (6 s), after lost_after (3 s).
    {
      path: 'keyed-lasting',
      method: 'POST',
      type: 'exec',
      run: 'async',
      command: [lasting],
      env: { MARKS: marks, SECONDS_TO_RUN: '4' },
      concurrency_key: '$payload.service',
    },
    { path: 'serial', method: 'POST', type: 'exec', run: 'async', command: [serial], env: { MARKS: marks }, max_concurrency: 1 },
    { path: 'once', method: 'POST', type: 'exec', run: 'async', command: [once], env: { MARKS: marks }, max_concurrency: 50 },
  ],
};
const toolkits = toolkitDir({ 'ops.yaml': ops });
const shared = {
  toolkits: { dir: toolkits, watch: false },
  // A drain longer than lost_after: a draining instance's runs must not be taken for lost meanwhile.
  runs: { heartbeat: '300ms', lost_after: '3s', cancel_grace: '500ms', drain_timeout: '6s' },
};

/** Runs on several instances (docs/runs.md, "Several instances"): real tkgate processes on one database. */
for (const dialect of dialects) {
  describe(`runs on several instances (${dialect.name})`, function () {
    this.timeout(90_000);
    const s = withDatabase(dialect, [{ username: 'ann', power: 10 }]);
    const gateways: GatewayProcess[] = [];
    const start = async () => {
      const gateway = await startGateway({ config: { ...shared, db: s.bed.dbConfig } });
      gateways.push(gateway);
      return gateway;
    };
    let a: GatewayProcess;
    let b: GatewayProcess;
    let token: string;
    const { ask, runOn, ended } = runCalls(() => token, 30_000);
    /** The gateway running a run, by its command's parent process; and the other one. */
    const placed = async (id: string): Promise<[GatewayProcess, GatewayProcess, number]> => {
      const file = path.join(marks, `${id}.gateway`);
      await eventually('the command runs', () => existsSync(file) && readFileSync(file, 'utf8').trim() !== '');
      const parent = Number(readFileSync(file, 'utf8'));
      const running = gateways.find((gateway) => gateway.child.pid === parent)!;
      expect(running, 'a gateway of the test runs it').to.not.equal(undefined);
      const other = [a, b].find((gateway) => gateway !== running && gateway.child.exitCode === null)!;
      return [running, other, Number(readFileSync(path.join(marks, `${id}.pid`), 'utf8'))];
    };

    before(async () => {
      [a, b] = await Promise.all([start(), start()]);
      token = await loginToken(a.base, 'ann', passwordOf('ann'));
    });
    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of gateways) process.stderr.write(`--- gateway ${gateway.child.pid}:\n${gateway.output().slice(-4000)}\n`);
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    });

    it('follows a run from the instance that does not run it, and cancels it there: SIGKILL after the grace, ended cancelled', async () => {
      const id = await ask(a, 'ticker');
      const [, other, pid] = await placed(id);
      const follower = new SseFollower(`${other.base}/runs/${id}/output`, { token });
      await eventually('lines arrive on the other instance', () => follower.text().split('\n').length > 3);
      // A chunk is what one read of the command's pipe gave: on a loaded host two ticks may share one.
      expect(follower.text()).to.match(/^tick 1\ntick 2\ntick 3\n/);
      expect(follower.events.map((event) => event.id)).to.deep.equal(follower.events.map((_, i) => String(i + 1)));
      const cancel = await call('POST', `${other.base}/runs/${id}/cancel`, { token });
      expect(cancel.status).to.equal(202);
      await follower.done;
      const end = follower.events.at(-1)!;
      expect(end.event).to.equal('end');
      expect(JSON.parse(end.data)).to.deep.equal({ status: 'cancelled', exit_code: null });
      expect(await ended(other, id)).to.include({ status: 'cancelled', reason: 'cancelled_by', cancelled_by: 'ann' });
      await eventually('the command is gone', () => !alive(pid));
      // Every chunk once, in order: the ticks are consecutive.
      const ticks = follower.text().trim().split('\n');
      expect(ticks).to.deep.equal(ticks.map((_, i) => `tick ${i + 1}`));
    });

    it('never lets two runs of a max_concurrency: 1 endpoint overlap across instances', async () => {
      rmSync(path.join(marks, 'serial.log'), { force: true });
      const ids = await Promise.all([a, b, a, b, a, b].map((gateway) => ask(gateway, 'serial')));
      for (const id of ids) expect(await ended(a, id)).to.include({ status: 'succeeded' });
      const lines = readFileSync(path.join(marks, 'serial.log'), 'utf8').trim().split('\n');
      expect(lines).to.have.length(12);
      for (let i = 0; i < lines.length; i += 2) {
        const id = lines[i]!.replace(/^start /, '');
        expect([lines[i], lines[i + 1]]).to.deep.equal([`start ${id}`, `end ${id}`]);
      }
    });

    it('starts every run exactly once while the instances race for the claims', async () => {
      rmSync(path.join(marks, 'starts.log'), { force: true });
      const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => ask(i % 2 ? a : b, 'once')));
      for (const id of ids) expect(await ended(b, id)).to.include({ status: 'succeeded' });
      const starts = readFileSync(path.join(marks, 'starts.log'), 'utf8').trim().split('\n');
      expect([...starts].sort()).to.deep.equal([...ids].sort());
    });

    it('ends the runs of an instance killed with SIGKILL lost (instance_lost), seen from the other', async () => {
      const id = await ask(a, 'ticker');
      const [running, other, pid] = await placed(id);
      await running.stop('SIGKILL');
      const run = await ended(other, id);
      expect(run).to.include({ status: 'lost', reason: 'instance_lost' });
      try {
        process.kill(-pid, 'SIGKILL'); // its command may outlive it (it dies of SIGPIPE at its next line)
      } catch {
        // Gone already.
      }
      const replacement = await start();
      if (running === a) a = replacement;
      else b = replacement;
    });

    it('on SIGTERM starts nothing more and heartbeats its runs through runs.drain_timeout (longer than lost_after): never lost, they end failed (gateway_stopped), and only then does the next run of their key start on the other instance', async () => {
      const first = await ask(a, 'keyed', { service: 'api' });
      const [running, other, pid] = await placed(first);
      const second = await ask(other, 'keyed', { service: 'api' });
      expect((await runOn(other, second)).status).to.equal('queued');
      const stopped = running.stop('SIGTERM');
      // Watched from the other instance until the first ends: it stays running past lost_after, and the second waits.
      const seen = new Set<string>();
      const firstEnd = await eventually(
        'the drained run ends',
        async () => {
          const [one, two] = await Promise.all([runOn(other, first), runOn(other, second)]);
          seen.add(one.status);
          if (one.status === 'running') expect(two.status, 'the second run of the key, while the first runs').to.equal('queued');
          return ENDED.includes(one.status) ? one : undefined;
        },
        30_000,
      );
      expect([...seen]).to.not.include('lost');
      expect(firstEnd).to.include({ status: 'failed', reason: 'gateway_stopped' });
      expect(await stopped).to.equal(0);
      await eventually('the drained command is gone', () => !alive(pid));
      // The place the drain freed is taken by the instance left, within its poll.
      const [runsSecond, , secondPid] = await placed(second);
      expect(runsSecond, 'the second run starts on the instance left').to.equal(other);
      expect((await runOn(other, second)).status).to.equal('running');
      expect((await call('POST', `${other.base}/runs/${second}/cancel`, { token })).status).to.equal(202);
      expect(await ended(other, second)).to.include({ status: 'cancelled' });
      await eventually('the second command is gone', () => !alive(secondPid));
      const replacement = await start();
      if (running === a) a = replacement;
      else b = replacement;
    });

    it('lets a run that ends by itself inside the drain, past lost_after, end succeeded, and the next run of its key start on the other instance', async () => {
      const first = await ask(a, 'keyed-lasting', { service: 'web' });
      const [running, other] = await placed(first);
      const second = await ask(running, 'keyed-lasting', { service: 'web' });
      const stopped = running.stop('SIGTERM');
      const seen = new Set<string>();
      const firstEnd = await eventually(
        'the run ends inside the drain',
        async () => {
          const [one, two] = await Promise.all([runOn(other, first), runOn(other, second)]);
          seen.add(one.status);
          if (one.status === 'running') expect(two.status, 'the second run of the key, while the first runs').to.equal('queued');
          return ENDED.includes(one.status) ? one : undefined;
        },
        30_000,
      );
      expect([...seen]).to.not.include('lost');
      expect(firstEnd).to.include({ status: 'succeeded', exit_code: 0 });
      expect(await stopped).to.equal(0);
      const [runsSecond] = await placed(second);
      expect(runsSecond, 'the second run starts on the instance left').to.equal(other);
      expect(await ended(other, second)).to.include({ status: 'succeeded' });
      const replacement = await start();
      if (running === a) a = replacement;
      else b = replacement;
    });
  });
}

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
import { runCalls, runCommands } from './run-commands.js';

const { marks, ticker, serial, once } = runCommands('tkgate-runs-three');

const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    { path: 'ticker', method: 'POST', type: 'exec', run: 'async', command: [ticker], env: { MARKS: marks } },
    { path: 'lone', method: 'POST', type: 'exec', run: 'async', command: [ticker], env: { MARKS: marks }, max_concurrency: 1 },
    { path: 'serial', method: 'POST', type: 'exec', run: 'async', command: [serial], env: { MARKS: marks }, max_concurrency: 1 },
    { path: 'once', method: 'POST', type: 'exec', run: 'async', command: [once], env: { MARKS: marks }, max_concurrency: 50, max_queued: 500 },
  ],
};
const shared = {
  toolkits: { dir: toolkitDir({ 'ops.yaml': ops }), watch: false },
  runs: { heartbeat: '300ms', lost_after: '4s', cancel_grace: '500ms', drain_timeout: '1s' },
};
/** Generous: three gateways and their commands share a loaded machine with other suites. */
const DEADLINE_MS = 60_000;

/**
 * Runs (docs/runs.md) on three real tkgate processes on one database (test/scale/runs-instances.test.ts has two):
 * claims racing three ways, a max_concurrency of 1 kept by three, a cancel and a follower on the two instances
 * that do not run the run, and the kill of the one that does.
 */
for (const dialect of dialects) {
  describe(`runs on three instances (${dialect.name})`, function () {
    this.timeout(180_000);
    const s = withDatabase(dialect, [{ username: 'ann', power: 10 }]);
    const all: GatewayProcess[] = [];
    let live: GatewayProcess[] = [];
    let token: string;
    const start = async () => {
      const gateway = await startGateway({ config: { ...shared, db: s.bed.dbConfig } });
      all.push(gateway);
      return gateway;
    };
    const { ask, runOn, ended } = runCalls(() => token, DEADLINE_MS);
    /** The gateway running a run (its command's parent process), the two others, and the command's pid. */
    const placed = async (id: string) => {
      const file = path.join(marks, `${id}.gateway`);
      await eventually('the command runs', () => existsSync(file) && readFileSync(file, 'utf8').trim() !== '', DEADLINE_MS);
      const parent = Number(readFileSync(file, 'utf8'));
      const running = live.find((gateway) => gateway.child.pid === parent);
      expect(running, 'a live gateway of the test runs it').to.not.equal(undefined);
      const others = live.filter((gateway) => gateway !== running);
      return { running: running!, others, pid: Number(readFileSync(path.join(marks, `${id}.pid`), 'utf8')) };
    };
    const killGroup = (pid: number) => {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    };

    before(async () => {
      // One after another: three starting at once on a loaded machine may each miss the start deadline.
      for (let i = 0; i < 3; i++) live.push(await start());
      token = await loginToken(live[0]!.base, 'ann', passwordOf('ann'));
    });
    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of all) process.stderr.write(`--- gateway ${gateway.child.pid}:\n${gateway.output().slice(-4000)}\n`);
    });
    after(async () => {
      await Promise.all(all.map((gateway) => gateway.stop('SIGKILL')));
    });

    it('starts every one of many runs exactly once while three instances race for the claims', async () => {
      rmSync(path.join(marks, 'starts.log'), { force: true });
      // Asked in waves of six (two per instance): ninety calls at once lock the queue's one row ninety deep, past a
      // loaded database's statement timeout (503 unavailable); the runs still pile up faster than they start.
      const ids: string[] = [];
      for (let wave = 0; wave < 15; wave++) ids.push(...(await Promise.all(Array.from({ length: 6 }, (_, i) => ask(live[i % 3]!, 'once')))));
      for (const [i, id] of ids.entries()) expect(await ended(live[(i + 1) % 3]!, id)).to.include({ status: 'succeeded' });
      const starts = readFileSync(path.join(marks, 'starts.log'), 'utf8').trim().split('\n');
      expect([...starts].sort()).to.deep.equal([...ids].sort());
    });

    it('never lets two runs of a max_concurrency: 1 endpoint overlap across three instances', async () => {
      rmSync(path.join(marks, 'serial.log'), { force: true });
      const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(live[i % 3]!, 'serial')));
      for (const id of ids) expect(await ended(live[0]!, id)).to.include({ status: 'succeeded' });
      const lines = readFileSync(path.join(marks, 'serial.log'), 'utf8').trim().split('\n');
      expect(lines).to.have.length(2 * ids.length);
      for (let i = 0; i < lines.length; i += 2) {
        const id = lines[i]!.replace(/^start /, '');
        expect([lines[i], lines[i + 1]]).to.deep.equal([`start ${id}`, `end ${id}`]);
      }
      expect(
        lines
          .filter((line) => line.startsWith('start '))
          .map((line) => line.slice(6))
          .sort(),
      ).to.deep.equal([...ids].sort());
    });

    it('cancels on one instance a run running on another, while the third follows it to its end', async () => {
      const id = await ask(live[0]!, 'ticker');
      const { others, pid } = await placed(id);
      const [canceller, watcher] = others as [GatewayProcess, GatewayProcess];
      const follower = new SseFollower(`${watcher.base}/runs/${id}/output`, { token });
      await eventually('lines arrive on a third instance', () => follower.events.length >= 3, DEADLINE_MS);
      const cancel = await call('POST', `${canceller.base}/runs/${id}/cancel`, { token });
      expect(cancel.status).to.equal(202);
      await follower.done;
      expect(follower.events.at(-1)!.event).to.equal('end');
      expect(JSON.parse(follower.events.at(-1)!.data)).to.deep.equal({ status: 'cancelled', exit_code: null });
      for (const gateway of live) expect(await ended(gateway, id)).to.include({ status: 'cancelled', reason: 'cancelled_by', cancelled_by: 'ann' });
      await eventually('the command is gone', () => !alive(pid), DEADLINE_MS);
      const ticks = follower.text().trim().split('\n');
      expect(ticks).to.deep.equal(ticks.map((_, i) => `tick ${i + 1}`));
    });

    it('ends the run of an instance killed with SIGKILL lost (instance_lost), seen by both survivors, and its queue moves on', async () => {
      const first = await ask(live[1]!, 'lone');
      const { running, others, pid } = await placed(first);
      const waiting = await ask(others[0]!, 'lone');
      expect((await runOn(others[1]!, waiting)).status).to.equal('queued');
      await running.stop('SIGKILL');
      live = others;
      killGroup(pid); // its command may outlive it (it would die of SIGPIPE at its next line)
      for (const gateway of live) expect(await ended(gateway, first)).to.include({ status: 'lost', reason: 'instance_lost' });
      // The place it held is free again: the waiting run starts on a survivor.
      const next = await placed(waiting);
      expect(live).to.include(next.running);
      expect((await call('POST', `${next.others[0]!.base}/runs/${waiting}/cancel`, { token })).status).to.equal(202);
      expect(await ended(next.others[0]!, waiting)).to.include({ status: 'cancelled' });
      await eventually('the second command is gone', () => !alive(next.pid), DEADLINE_MS);
    });
  });
}

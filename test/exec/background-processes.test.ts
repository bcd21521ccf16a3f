import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { alive, scriptWriter } from '../support/executables.js';
import { call, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { argvOf } from './helper-processes.js';
import { toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-background-bin-');
const pidDir = tempDir('tkgate-background-pids-');
/**
 * A service start script's way: a daemon in a session of its own (out of the command's process group, so no
 * kill of the group reaches it) that keeps the command's stdout and stderr open, its pid written down.
 */
const startDaemon = '( setsid sleep 120 & echo $! > "$PID_DIR/$$" ); echo started';
const startsAndExits = script('starts-and-exits', startDaemon);
/** The same, then the command goes on, deaf to SIGTERM: only the SIGKILL after the grace ends it. */
const startsAndStays = script('starts-and-stays', `trap "" TERM; ${startDaemon}; while :; do sleep 0.1; done`);

const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    { path: 'start', method: 'POST', type: 'exec', run: 'async', command: [startsAndExits], context: 'none', env: { PID_DIR: pidDir }, max_concurrency: 1 },
    { path: 'stay', method: 'POST', type: 'exec', run: 'async', command: [startsAndStays], context: 'none', env: { PID_DIR: pidDir } },
    { path: 'stay-1s', method: 'POST', type: 'exec', run: 'async', command: [startsAndStays], context: 'none', env: { PID_DIR: pidDir }, timeout: '1s' },
    { path: 'call', method: 'GET', type: 'exec', command: [startsAndExits], context: 'none', env: { PID_DIR: pidDir } },
    { path: 'call-stays', method: 'GET', type: 'exec', command: [startsAndStays], context: 'none', env: { PID_DIR: pidDir }, timeout: '1s' },
  ],
};

/** Whether the process is still the daemon (its pid not yet reused by another). */
const isDaemon = (pid: number) => alive(pid) && argvOf(pid)?.join(' ') === 'sleep 120';

/** The daemons the commands started, killed once each test is done (they are no run's any more: docs/runs.md). */
function killDaemons(): void {
  for (const name of readdirSync(pidDir)) {
    const text = readFileSync(path.join(pidDir, name), 'utf8').trim();
    if (/^\d+$/.test(text) && isDaemon(Number(text))) process.kill(Number(text), 'SIGKILL');
    rmSync(path.join(pidDir, name));
  }
}

/** A command that leaves a process holding its stdout ends its run, or its call, with its own exit (docs/runs.md). */
for (const dialect of dialects) {
  describe(`exec: a command that leaves a process holding its output (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withGateway(dialect, [{ username: 'ann', power: 10 }], { runs: { cancel_grace: '1s' } }, { toolkitsDir: toolkitDir({ 'ops.yaml': ops }) });
    let token = '';
    before(async () => (token = await s.login('ann')));
    afterEach(killDaemons);
    const runOf = async (id: string) => (await call('GET', `${s.gateway.base}/runs/${id}`, { token })).body.data;
    const started = async (pathName: string): Promise<string> => {
      const reply = await toolkitClient(s.gateway.base, token).post('ops', pathName, {});
      expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
      return reply.body.data.run_id;
    };
    const ended = (id: string) =>
      eventually(`run ${id} ends`, async () => {
        const run = await runOf(id);
        return ['queued', 'running'].includes(run.status) ? undefined : run;
      });
    const output = async (id: string) => (await fetch(`${s.gateway.base}/runs/${id}/output`, { headers: { authorization: `Bearer ${token}` } })).text();

    it('ends the run when the command exits, with its output, and frees its place for the next run', async () => {
      // max_concurrency 1: the second run starts only once the first has ended.
      const ids = [await started('start'), await started('start')];
      for (const id of ids) {
        const run = await ended(id);
        expect(run).to.deep.include({ status: 'succeeded', exit_code: 0 });
        expect(run.result).to.deep.equal({ output: 'started\n' });
      }
      expect(await output(ids[0]!)).to.equal('started\n');
    });

    it('ends a running run on cancel (SIGKILL after the grace), whatever its daemon holds', async () => {
      const id = await started('stay');
      await eventually('the daemon started', async () => (await output(id)) === 'started\n');
      const cancel = await call('POST', `${s.gateway.base}/runs/${id}/cancel`, { token });
      expect(cancel.status).to.equal(202);
      expect(await ended(id)).to.deep.include({ status: 'cancelled' });
    });

    it('ends a running run at its timeout, whatever its daemon holds', async () => {
      const run = await ended(await started('stay-1s'));
      expect(run).to.deep.include({ status: 'timed_out', reason: 'timeout' });
    });

    it('answers a call when its command exits, and at its timeout when it stays', async () => {
      const c = toolkitClient(s.gateway.base, token);
      const answer = await c.get('ops', 'call');
      expect(answer.status).to.equal(200);
      expect(answer.body.data).to.deep.equal({ output: 'started\n' });
      const stays = await c.get('ops', 'call-stays');
      expect(stays.status).to.equal(500);
      expect(stays.body.error).to.deep.include({ code: 'exec_failed' });
      expect(stays.body.error.details).to.deep.include({ reason: 'timeout' });
    });
  });
}

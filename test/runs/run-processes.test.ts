import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { sleep } from '../support/fixtures.js';
import { scriptWriter } from '../support/executables.js';
import { call, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-run-processes-bin-');
/** Logs its start, waits until the test says go (a file named after it appears), logs its end. */
const held = script(
  'held',
  'name=${TKGATE_RUN_ID:-call}; echo "start $name" >> "$DIR/processes.log"; while [ ! -e "$DIR/go-$name" ]; do sleep 0.05; done; echo "end $name" >> "$DIR/processes.log"; echo "{}"',
);

const opsIn = (dir: string) => ({
  name: 'ops',
  type: 'app',
  endpoints: [
    { path: 'job', method: 'POST', type: 'exec', run: 'async', command: [held], context: 'none', env: { DIR: dir }, max_concurrency: 4 },
    { path: 'call', method: 'POST', type: 'exec', command: [held], context: 'none', env: { DIR: dir }, timeout: '60s' },
  ],
});

/** Runs are processes of the exec plugin like calls: plugin_options max_processes holds both together. */
for (const dialect of dialects) {
  describe(`runs count against exec's max_processes (${dialect.name})`, function () {
    this.timeout(60_000);
    const dir = tempDir('tkgate-run-processes-');
    const log = path.join(dir, 'processes.log');
    const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []);
    const started = () =>
      lines()
        .filter((line) => line.startsWith('start '))
        .map((line) => line.slice(6));
    const s = withGateway(
      dialect,
      [{ username: 'ann', power: 10 }],
      { plugin_options: { '@tkgate/plugin-exec': { max_processes: 1 } } },
      {
        toolkitsDir: toolkitDir({ 'ops.yaml': opsIn(dir) }),
      },
    );

    it('starts no second run while one holds the only place, makes a call wait for it, and never lets two commands overlap', async () => {
      const token = await s.login('ann');
      const client = toolkitClient(s.gateway.base, token);
      const ids = [(await client.post('ops', 'job', {})).body.data.run_id, (await client.post('ops', 'job', {})).body.data.run_id] as string[];
      const first = await eventually('a run starts', () => started()[0]);
      const second = ids.find((id) => id !== first)!;
      const answer = client.post('ops', 'call', {});
      // Several ticks (a freed place is taken within 1 s): the other run stays queued, max_concurrency 4 notwithstanding.
      await sleep(2_000);
      expect(started()).to.deep.equal([first]);
      expect((await call('GET', `${s.gateway.base}/runs/${second}`, { token })).body.data.status).to.equal('queued');
      // Each command, once started, is let go; the one waiting (the run or the call) takes the place after it.
      for (let n = 1; n <= 3; n++) {
        const name = await eventually(`command ${n} starts`, () => started()[n - 1]);
        writeFileSync(path.join(dir, `go-${name}`), '');
      }
      expect((await answer).status).to.equal(200);
      await eventually('both runs end', async () => {
        for (const id of ids) if ((await call('GET', `${s.gateway.base}/runs/${id}`, { token })).body.data.status !== 'succeeded') return false;
        return true;
      });
      const all = lines();
      expect(all).to.have.length(6);
      for (let i = 0; i < all.length; i += 2) expect(all[i + 1]).to.equal(all[i]!.replace(/^start /, 'end '));
      expect(started().sort()).to.deep.equal(['call', ...ids].sort());
    });
  });
}

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { writeConfig } from '../support/gateway-process.js';
import { call, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-runs-cli-bin-');
const goDir = tempDir('tkgate-runs-cli-go-');
const waits = script('waits', 'echo "first line"; while [ ! -e "$GO_DIR/$TKGATE_RUN_ID" ]; do sleep 0.05; done; echo "to stderr" >&2; echo "last line"');
const sleeper = script('sleeper', 'sleep 30');

const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    { path: 'waits', method: 'POST', type: 'exec', run: 'async', command: [waits], env: { GO_DIR: goDir } },
    { path: 'single', method: 'POST', type: 'exec', run: 'async', command: [sleeper], max_concurrency: 1 },
  ],
};

// The CLI works on the database, whichever dialect: one is enough here (the store's queries run on both in runs.test.ts).
const dialect = dialects[0]!;
describe(`tkgate runs (${dialect.name})`, function () {
  this.timeout(60_000);
  const s = withGateway(
    dialect,
    [{ username: 'ann', power: 10 }],
    { runs: { cancel_grace: '500ms', retention: '1m' } },
    { toolkitsDir: toolkitDir({ 'ops.yaml': ops }) },
  );
  const cli = (...args: string[]) => runCli(['runs', ...args, '--config', writeConfig({ db: s.bed.dbConfig })]);
  const status = async (id: string, token: string) => (await call('GET', `${s.gateway.base}/runs/${id}`, { token })).body.data.status as string;

  it('lists, shows and follows the output of a run until it ends', async () => {
    const token = await s.login('ann');
    const id = (await toolkitClient(s.gateway.base, token).post('ops', 'waits', {})).body.data.run_id as string;
    await eventually('the first line is stored', async () => (await call('GET', `${s.gateway.base}/runs/${id}/output`, { token })).body === 'first line\n');
    const following = cli('output', id, '--follow');
    const listed = await cli('list', '--status', 'running', '--toolkit', 'ops');
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.include(id).and.include('ops/waits').and.include('ann');
    const json = await cli('list', '--json');
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id),
    ).to.include(id);
    writeFileSync(path.join(goDir, id), '');
    const followed = await following;
    expect(followed.code, followed.stderr).to.equal(0);
    expect(followed.stdout).to.equal('first line\nto stderr\nlast line\n');
    const shown = await cli('show', id);
    expect(JSON.parse(shown.stdout)).to.include({ id, status: 'succeeded', exit_code: 0 });
  });

  it('cancels a queued and a running run; an ended or unknown run is an error, a bad --status a usage error', async () => {
    const token = await s.login('ann');
    const client = toolkitClient(s.gateway.base, token);
    const running = (await client.post('ops', 'single', {})).body.data.run_id as string;
    await eventually('the first runs', async () => (await status(running, token)) === 'running');
    const queued = (await client.post('ops', 'single', {})).body.data.run_id as string;
    const cancelQueued = await cli('cancel', queued);
    expect(cancelQueued.stdout).to.equal(`run ${queued}: cancelled\n`);
    expect(await status(queued, token)).to.equal('cancelled');
    const cancelRunning = await cli('cancel', running);
    expect(cancelRunning.stdout).to.equal(`run ${running}: cancelling\n`);
    await eventually('the running run ends cancelled', async () => (await status(running, token)) === 'cancelled');
    const again = await cli('cancel', running);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.include('has ended (cancelled)');
    const unknown = await cli('show', 'AAAAAAAAAAAAAAAAAAAAAA');
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.include('no run AAAAAAAAAAAAAAAAAAAAAA');
    const bad = await cli('list', '--status', 'done');
    expect(bad.code).to.equal(2);
  });

  it('purges ended runs and their output past runs.retention, on one instance', async () => {
    const token = await s.login('ann');
    const id = (await toolkitClient(s.gateway.base, token).post('ops', 'waits', {})).body.data.run_id as string;
    writeFileSync(path.join(goDir, id), '');
    await eventually('the run ends', async () => (await status(id, token)) === 'succeeded');
    // Ended long ago, as far as the database says: the next purge (a tenth of the 1m retention) takes it.
    await s.bed
      .db('runs')
      .where({ id })
      .update({ ended_at: Date.now() - 120_000 });
    await eventually('the run is purged', async () => (await call('GET', `${s.gateway.base}/runs/${id}`, { token })).status === 404, 30_000);
    expect(await s.bed.db('run_output').where({ run_id: id }).count({ n: '*' }).first()).to.deep.include({ n: 0 });
  });
});

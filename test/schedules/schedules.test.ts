import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { writeConfig } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { scrape, valueOf } from '../support/ops.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, saveByRename, toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-schedules-bin-');
/** Waits until the file its argument names exists (the test lets it go), then answers. */
const held = script('held', 'while [ ! -e "$1" ]; do sleep 0.05; done; echo "{}"');
const quick = script('quick', 'echo "{}"');

const EVERY_2S = '*/2 * * * * *';
const id = (name: string, endpoint: string) => `ops/${endpoint}#${name}`;
const segment = (scheduleId: string) => encodeURIComponent(scheduleId);

function opsToolkit(dir: string) {
  const job = (extra: Record<string, unknown>): Record<string, unknown> => ({ method: 'POST', type: 'exec', run: 'async', context: 'none', ...extra });
  return {
    name: 'ops',
    type: 'app',
    endpoints: [
      job({
        path: 'skip',
        command: [held, path.join(dir, 'go-skip')],
        runs: { view_power: 20, cancel_power: 30 },
        permissions: { min_power: 10 },
        schedule: [{ name: 'every', cron: EVERY_2S, as: 'bot', overlap: 'skip' }],
      }),
      job({ path: 'queue', command: [held, path.join(dir, 'go-queue')], schedule: [{ name: 'every', cron: EVERY_2S, as: 'bot', overlap: 'queue' }] }),
      job({
        path: 'failing',
        command: [quick],
        client_filter: { allowed_fields: ['db'], field_rules: { db: { type: 'string', pattern: '^[a-z]+$' } } },
        schedule: [
          { name: 'nobody', cron: EVERY_2S, as: 'nobody', overlap: 'allow' },
          { name: 'disabled', cron: EVERY_2S, as: 'gone', overlap: 'allow' },
          { name: 'payload', cron: EVERY_2S, as: 'bot', overlap: 'allow', payload: { db: 'NOT VALID' } },
        ],
      }),
      job({
        path: 'full',
        command: [held, path.join(dir, 'go-full')],
        max_concurrency: 1,
        max_queued: 1,
        schedule: [{ name: 'every', cron: EVERY_2S, as: 'bot', overlap: 'allow' }],
      }),
      job({
        path: 'nightly',
        command: [quick],
        schedule: [
          { name: 'berlin', cron: '30 2 * * *', timezone: 'Europe/Berlin', as: 'bot' },
          { name: 'adelaide', cron: '30 2 * * *', timezone: 'Australia/Adelaide', as: 'bot' },
        ],
      }),
    ],
  };
}

for (const dialect of dialects) {
  describe(`schedules on one gateway: overlap, failures, pause, routes, CLI (${dialect.name})`, function () {
    this.timeout(90_000);
    const dir = tempDir('tkgate-schedules-');
    const toolkits = toolkitDir({ 'ops.yaml': opsToolkit(dir) });
    const s = withGateway(
      dialect,
      [
        { username: 'bot', power: 10 },
        { username: 'gone', power: 10 },
        { username: 'ann', power: 10 },
        { username: 'low', power: 5 },
        { username: 'viewer', power: 20 },
        { username: 'boss', power: 30 },
      ],
      {},
      { toolkitsDir: toolkits, prepare: async (db) => void (await db('users').where({ username: 'gone' }).update({ disabled: true })) },
    );
    const fires = async (scheduleId: string) =>
      (await s.bed.db('schedule_fires').where({ schedule_id: scheduleId }).orderBy('fire_at')) as Array<{
        fire_at: number | string;
        outcome: string;
        run_id: string | null;
        reason: string | null;
      }>;
    const runStatus = async (runId: string) => ((await s.bed.db('runs').where({ id: runId }).first('status')) as { status: string }).status;

    it('overlap skip: fires while the run goes are recorded skipped, and the next fire after its end starts a run', async () => {
      const scheduleId = id('every', 'skip');
      const skipped = await eventually('a fire skipped for overlap', async () => {
        const rows = await fires(scheduleId);
        return rows.some((row) => row.outcome === 'skipped') ? rows : undefined;
      });
      const started = skipped.filter((row) => row.outcome === 'started');
      expect(started).to.have.length(1);
      expect(skipped.find((row) => row.outcome === 'skipped')!.reason).to.equal(`overlap: the previous run ${started[0]!.run_id} has not ended`);
      const run = (await call('GET', `${s.gateway.base}/runs/${started[0]!.run_id}`, { token: await s.login('boss') })).body.data;
      expect(run.actor).to.deep.include({ kind: 'schedule', username: 'bot' });
      writeFileSync(path.join(dir, 'go-skip'), '');
      await eventually('a second run started', async () => (await fires(scheduleId)).filter((row) => row.outcome === 'started').length >= 2);
      const audit = (await s.bed.db('audit_events').where({ action: 'schedule_fire', actor: 'schedule' }).pluck('details')) as string[];
      const details = audit.map((text) => JSON.parse(text)).filter((each) => each.schedule === scheduleId);
      expect(details.map((each) => each.outcome))
        .to.include('started')
        .and.include('skipped');
    });

    it('overlap queue: a fire during a run waits behind it and starts once it ended', async () => {
      const scheduleId = id('every', 'queue');
      const first = await eventually('the first run', async () => (await fires(scheduleId)).find((row) => row.outcome === 'started'));
      await eventually('a later fire held', async () => (await fires(scheduleId)).some((row) => row.outcome === 'pending'));
      expect(await runStatus(first.run_id!)).to.equal('running');
      writeFileSync(path.join(dir, 'go-queue'), '');
      const second = await eventually('the held fire started', async () => (await fires(scheduleId)).filter((row) => row.outcome === 'started')[1]);
      expect(Number(second.fire_at)).to.be.greaterThan(Number(first.fire_at));
      const [one, two] = (await s.bed.db('runs').whereIn('id', [first.run_id!, second.run_id!]).select('id', 'started_at', 'ended_at')) as Array<{
        id: string;
        started_at: number | string;
        ended_at: number | string | null;
      }>;
      const byId = new Map([one!, two!].map((row) => [row.id, row]));
      expect(await runStatus(first.run_id!)).to.equal('succeeded');
      // The held run starts only once the previous one has ended.
      expect(Number(byId.get(second.run_id!)!.started_at ?? Infinity)).to.be.at.least(Number(byId.get(first.run_id!)!.ended_at));
    });

    it('records a failed fire naming the reason: a missing or disabled as user, a payload failing client_filter, a full queue', async () => {
      const reasonOf = (scheduleId: string) =>
        eventually(`a failed fire of ${scheduleId}`, async () => (await fires(scheduleId)).find((row) => row.outcome === 'failed')?.reason);
      expect(await reasonOf(id('nobody', 'failing'))).to.equal('as user nobody does not exist');
      expect(await reasonOf(id('disabled', 'failing'))).to.equal('as user gone is disabled');
      expect(await reasonOf(id('payload', 'failing'))).to.match(/^payload fails client_filter: .*db/);
      expect(await reasonOf(id('every', 'full'))).to.equal("queue full: the endpoint's max_queued runs are waiting");
      writeFileSync(path.join(dir, 'go-full'), '');
      const { samples } = await scrape(s.gateway);
      expect(valueOf(samples, 'tkgate_schedule_fires_total', { schedule: id('nobody', 'failing'), outcome: 'failed' })).to.be.greaterThan(0);
    });

    it('lists the schedules the caller may see, with next and last fire, and pages the fires', async () => {
      const ann = await s.login('ann');
      const list = (await call('GET', `${s.gateway.base}/schedules`, { token: ann })).body.data.schedules as Array<Record<string, any>>;
      expect(list.map((entry) => entry.id))
        .to.include(id('every', 'skip'))
        .and.include(id('berlin', 'nightly'));
      const berlin = list.find((entry) => entry.id === id('berlin', 'nightly'))!;
      expect(berlin).to.deep.include({ toolkit: 'ops', endpoint: 'nightly', cron: '30 2 * * *', timezone: 'Europe/Berlin', last_fire: null, paused: false });
      expect(Date.parse(berlin.next_fire_at)).to.be.greaterThan(Date.now());
      const skip = list.find((entry) => entry.id === id('every', 'skip'))!;
      expect(skip.last_fire).to.have.keys('fire_at', 'outcome', 'run_id');
      // Below the endpoint's min_power and its view_power: not listed, and not found.
      const low = await s.login('low');
      const lower = (await call('GET', `${s.gateway.base}/schedules`, { token: low })).body.data.schedules as Array<{ id: string }>;
      expect(lower.map((entry) => entry.id)).not.to.include(id('every', 'skip'));
      const hidden = await call('GET', `${s.gateway.base}/schedules/${segment(id('every', 'skip'))}/fires`, { token: low });
      expect([hidden.status, hidden.body.error.code]).to.deep.equal([404, 'schedule_not_found']);

      const page = await call('GET', `${s.gateway.base}/schedules/${segment(id('every', 'skip'))}/fires?limit=2`, { token: ann });
      expect(page.status).to.equal(200);
      expect(page.body.data.fires).to.have.length(2);
      expect(Date.parse(page.body.data.fires[0].fire_at)).to.be.greaterThan(Date.parse(page.body.data.fires[1].fire_at));
      const next = await call('GET', `${s.gateway.base}/schedules/${segment(id('every', 'skip'))}/fires?limit=2&cursor=${page.body.data.next_cursor}`, {
        token: ann,
      });
      expect(Date.parse(next.body.data.fires[0].fire_at)).to.be.lessThan(Date.parse(page.body.data.fires[1].fire_at));
      const bad = await call('GET', `${s.gateway.base}/schedules/${segment(id('every', 'skip'))}/fires?limit=0&cursor=x`, { token: ann });
      expect([bad.status, bad.body.error.code, bad.body.error.details.map((problem: { field: string }) => problem.field)]).to.deep.equal([
        400,
        'invalid_payload',
        ['limit', 'cursor'],
      ]);
      expect((await call('GET', `${s.gateway.base}/schedules`)).status).to.equal(401);
    });

    it('previews the daylight-saving days of Europe/Berlin and a half-hour zone, from any instant', async () => {
      const token = await s.login('ann');
      const preview = async (name: string, from: string, n: number) =>
        (await call('GET', `${s.gateway.base}/schedules/${segment(id(name, 'nightly'))}/preview?from=${encodeURIComponent(from)}&n=${n}`, { token })).body.data
          .fires;
      expect(await preview('berlin', '2027-03-27T00:00:00Z', 3)).to.deep.equal([
        { utc: '2027-03-27T01:30:00Z', local: '2027-03-27T02:30:00+01:00' },
        { utc: '2027-03-28T01:00:00Z', local: '2027-03-28T03:00:00+02:00' },
        { utc: '2027-03-29T00:30:00Z', local: '2027-03-29T02:30:00+02:00' },
      ]);
      expect(await preview('berlin', '2027-10-30T00:00:00Z', 3)).to.deep.equal([
        { utc: '2027-10-30T00:30:00Z', local: '2027-10-30T02:30:00+02:00' },
        { utc: '2027-10-31T00:30:00Z', local: '2027-10-31T02:30:00+02:00' },
        { utc: '2027-11-01T01:30:00Z', local: '2027-11-01T02:30:00+01:00' },
      ]);
      expect(await preview('adelaide', '2027-10-02T00:00:00Z', 2)).to.deep.equal([
        { utc: '2027-10-02T16:30:00Z', local: '2027-10-03T03:00:00+10:30' },
        { utc: '2027-10-03T16:00:00Z', local: '2027-10-04T02:30:00+10:30' },
      ]);
      const bad = await call('GET', `${s.gateway.base}/schedules/${segment(id('berlin', 'nightly'))}/preview?from=yesterday&n=1000`, { token });
      expect([bad.status, bad.body.error.details.map((problem: { field: string }) => problem.field)]).to.deep.equal([400, ['n', 'from']]);
    });

    it('pauses and resumes with the endpoint’s runs.cancel_power, kept in the database: fires meanwhile are skipped (paused)', async () => {
      const scheduleId = id('every', 'skip');
      const url = (verb: string) => `${s.gateway.base}/schedules/${segment(scheduleId)}/${verb}`;
      const refused = await call('POST', url('pause'), { token: await s.login('viewer') });
      expect([refused.status, refused.body.error.code]).to.deep.equal([403, 'forbidden']);
      const boss = await s.login('boss');
      const paused = await call('POST', url('pause'), { token: boss });
      expect([paused.status, paused.body.data.paused]).to.deep.equal([200, true]);
      const since = Date.now();
      await eventually('a fire skipped as paused', async () => (await fires(scheduleId)).some((row) => row.reason === 'paused' && Number(row.fire_at) > since));
      expect((await call('POST', url('resume'), { token: boss })).body.data.paused).to.equal(false);
      const resumed = Date.now();
      await eventually('a run after the resume', async () =>
        (await fires(scheduleId)).some((row) => row.outcome === 'started' && Number(row.fire_at) > resumed),
      );
      const events = (await s.bed.db('audit_events').whereIn('action', ['schedule_pause', 'schedule_resume']).orderBy('id').pluck('action')) as string[];
      expect(events).to.deep.equal(['schedule_pause', 'schedule_resume']);
    });

    it('has the CLI call the same commands: list, preview, fires and pause', async () => {
      const config = writeConfig({ db: s.bed.dbConfig, toolkits: { dir: toolkits }, plugins: pluginsWithTestFunctions }, tempDir());
      const cli = (...args: string[]) => runCli(['schedules', ...args, '--config', config]);
      // Independent reads at once (each CLI start loads the plugins and compiles the toolkits), then the change.
      const [list, preview, firesOut] = await Promise.all([
        cli('list', '--json'),
        cli('preview', id('berlin', 'nightly'), '--from', '2027-03-27T12:00:00Z', '--n', '1'),
        cli('fires', id('nobody', 'failing'), '--limit', '3'),
      ]);
      expect(list.code, list.stderr).to.equal(0);
      const ids = list.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id);
      expect(ids).to.include(id('berlin', 'nightly'));
      expect(preview.stdout).to.equal('2027-03-28T01:00:00Z  2027-03-28T03:00:00+02:00\n');
      // The newest fire may still be pending: the older ones have their outcome.
      expect(firesOut.stdout.split('\n').filter((line) => /^\S+Z {2}failed {3}- {2}as user nobody does not exist$/.test(line)).length).to.be.greaterThan(0);
      const pause = await cli('pause', id('berlin', 'nightly'));
      expect(pause.stdout).to.equal(`schedule ${id('berlin', 'nightly')}: paused\n`);
      const token = await s.login('ann');
      const listed = (await call('GET', `${s.gateway.base}/schedules`, { token })).body.data.schedules.find(
        (entry: { id: string }) => entry.id === id('berlin', 'nightly'),
      );
      expect(listed.paused).to.equal(true);
      expect(await s.bed.db('audit_events').where({ action: 'schedule_pause', actor: 'cli' }).count({ n: '*' }).first()).to.deep.include({ n: 1 });
    });

    it('applies a reload from the next fire: a changed cron and zone, a removed schedule no longer listed', async () => {
      const changed = opsToolkit(dir);
      const nightly = changed.endpoints.find((endpoint) => endpoint.path === 'nightly')!;
      nightly.schedule = [{ name: 'berlin', cron: '0 4 * * *', timezone: 'Asia/Kolkata', as: 'bot' }];
      saveByRename(toolkits, 'ops.yaml', changed);
      const token = await s.login('ann');
      const berlin = await eventually('the reload', async () => {
        const list = (await call('GET', `${s.gateway.base}/schedules`, { token })).body.data.schedules as Array<Record<string, any>>;
        return list.some((entry) => entry.id === id('adelaide', 'nightly')) ? undefined : list.find((entry) => entry.id === id('berlin', 'nightly'));
      });
      expect(berlin).to.deep.include({ cron: '0 4 * * *', timezone: 'Asia/Kolkata' });
      // 04:00 in Kolkata is 22:30Z the day before.
      expect(berlin.next_fire_at).to.match(/T22:30:00Z$/);
      const gone = await call('GET', `${s.gateway.base}/schedules/${segment(id('adelaide', 'nightly'))}/preview`, { token });
      expect([gone.status, gone.body.error.code]).to.deep.equal([404, 'schedule_not_found']);
    });
  });
}

import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { withDatabase } from '../support/suite.js';
import { pluginsWithTestFunctions, saveByRename, toolkitDir } from '../support/toolkit-files.js';

const quick = scriptWriter('tkgate-schedule-instances-bin-')('quick', 'echo "{}"');

/** Two schedules of one endpoint, every second: one makes up the latest missed fire, one makes up none. */
const opsToolkit = (payload: Record<string, unknown>) => ({
  name: 'ops',
  type: 'app',
  endpoints: [
    {
      path: 'tick',
      method: 'POST',
      type: 'exec',
      run: 'async',
      context: 'none',
      command: [quick],
      max_concurrency: 8,
      schedule: [
        { name: 'latest', cron: '* * * * * *', as: 'bot', overlap: 'allow', payload },
        { name: 'skip', cron: '* * * * * *', as: 'bot', overlap: 'allow', missed: 'skip', payload },
      ],
    },
  ],
});

interface FireRow {
  schedule_id: string;
  fire_at: number;
  outcome: string;
  run_id: string | null;
}

for (const dialect of dialects) {
  describe(`a schedule fires exactly once across three gateway processes (${dialect.name})`, function () {
    this.timeout(150_000);
    const s = withDatabase(dialect, [{ username: 'bot', power: 0 }]);
    const dir = toolkitDir({ 'ops.yaml': opsToolkit({ round: 1 }) });
    const gateways: GatewayProcess[] = [];
    const start = () =>
      startGateway({
        config: { db: s.bed.dbConfig, toolkits: { dir, watch: true, settle: '100ms' }, plugins: pluginsWithTestFunctions, log: { level: 'info' } },
      });
    const fires = async (): Promise<FireRow[]> =>
      ((await s.bed.db('schedule_fires').orderBy(['schedule_id', 'fire_at'])) as Array<Record<string, unknown>>).map((row) => ({
        schedule_id: String(row.schedule_id),
        fire_at: Number(row.fire_at),
        outcome: String(row.outcome),
        run_id: row.run_id == null ? null : String(row.run_id),
      }));
    const startedSince = async (since: number) =>
      (await fires()).filter((row) => row.schedule_id === 'ops/tick#latest' && row.outcome === 'started' && row.fire_at > since).length;

    after(() => Promise.all(gateways.map((gateway) => gateway.stop())));

    it('through a reload and a restart of one instance, then a stop of all across fires: one run per fire, one make-up run', async () => {
      gateways.push(...(await Promise.all([start(), start(), start()])));
      const begun = Date.now();
      await eventually('three fires', async () => (await startedSince(begun)) >= 3, 30_000);

      // A reload on every instance: the schedules stay, their next fires go on.
      saveByRename(dir, 'ops.yaml', opsToolkit({ round: 2 }));
      await eventually(
        'every instance reloaded',
        () => gateways.every((gateway) => gateway.logs.some((line) => line.msg === 'toolkit reloaded')) || undefined,
        30_000,
      );
      const reloaded = Date.now();
      await eventually('fires after the reload', async () => (await startedSince(reloaded)) >= 2, 30_000);

      // One instance restarts; the others keep firing meanwhile.
      await gateways[0]!.stop();
      gateways[0] = await start();
      const restarted = Date.now();
      await eventually('fires after the restart', async () => (await startedSince(restarted)) >= 2, 30_000);

      // Every instance down across several fires; one comes back.
      await Promise.all(gateways.splice(0).map((gateway) => gateway.stop()));
      const down = Math.max(...(await fires()).map((row) => row.fire_at));
      await eventually('three fire times pass', () => Date.now() > down + 3_500 || undefined);
      gateways.push(await start());
      const back = Date.now();
      await eventually('a fire after the return', async () => (await startedSince(back)) >= 1, 30_000);
      // The catch-up decides once instances that were up would have claimed their fires (a few seconds).
      await eventually('the catch-up', async () => (await fires()).some((row) => row.schedule_id === 'ops/tick#skip' && row.outcome === 'missed'), 30_000);
      await Promise.all(gateways.splice(0).map((gateway) => gateway.stop()));

      const rows = await fires();
      for (const scheduleId of ['ops/tick#latest', 'ops/tick#skip']) {
        const mine = rows.filter((row) => row.schedule_id === scheduleId);
        // Every second from the first fire to the last has its row (fired, or recorded missed), each once.
        const times = mine.map((row) => row.fire_at);
        expect(times.length).to.be.greaterThan(10);
        for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!, `${scheduleId} after ${new Date(times[i - 1]!).toISOString()}`).to.equal(1000);
        expect(mine.filter((row) => row.outcome === 'pending')).to.deep.equal([]);
        // The downtime (well before the return: fires just before it may be on time there): all recorded missed, but
        // for `latest` the latest one, made up by one run.
        const gap = mine.filter((row) => row.fire_at > down && row.fire_at < back - 2_000);
        expect(gap.length, `${scheduleId}: fires while every instance was down`).to.be.at.least(1);
        expect(gap.filter((row) => row.outcome !== 'missed').map((row) => row.outcome)).to.satisfy(
          (others: string[]) => others.length === 0 || (scheduleId === 'ops/tick#latest' && others.length === 1 && others[0] === 'started'),
        );
      }
      // One run per started fire: as many runs as started fires, each fire's its own.
      const started = rows.filter((row) => row.outcome === 'started');
      const runs = (await s.bed.db('runs').where({ actor: 'schedule' }).pluck('id')) as string[];
      expect(new Set(started.map((row) => row.run_id)).size).to.equal(started.length);
      expect([...runs].sort()).to.deep.equal(started.map((row) => row.run_id).sort());
      const madeUpEvents = ((await s.bed.db('audit_events').where({ action: 'schedule_fire' }).pluck('details')) as string[])
        .map((text) => JSON.parse(text))
        .filter((details) => details.made_up === true);
      expect(madeUpEvents.map((details) => details.schedule)).to.deep.equal(['ops/tick#latest']);
      const madeUpAt = Date.parse(madeUpEvents[0].fire_at);
      expect(madeUpAt).to.be.greaterThan(down).and.lessThan(back);
      expect(rows.find((row) => row.schedule_id === 'ops/tick#latest' && row.fire_at === madeUpAt)?.outcome).to.equal('started');
    });
  });
}

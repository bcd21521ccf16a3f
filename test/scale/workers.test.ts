import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { passwordOf, sleep } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { authClient, loginToken, toolkitClient } from '../support/http.js';
import { withDatabase } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir, writeToolkit, type ToolkitDoc } from '../support/toolkit-files.js';

const live = (group: string): ToolkitDoc => ({ name: 'live', type: 'app', default_group: group, endpoints: [echoEndpoint()] });

/** The direct children of a process (its cluster workers, or a worker's spawn helpers). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // ps exits 1 when there are none
  }
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** `server.workers: 2` (docs/scaling.md, "Workers"): one port, a dead worker replaced, reloads everywhere and logged once. */
for (const dialect of dialects) {
  describe(`server.workers (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withDatabase(dialect, [{ username: 'wes' }]);
    const dir = toolkitDir({ 'live.yaml': live('v1') });
    let gateway: GatewayProcess;

    before(async () => {
      gateway = await startGateway({
        config: { db: s.bed.dbConfig, server: { port: 0, workers: 2 }, toolkits: { dir, watch: true }, plugins: pluginsWithTestFunctions },
      });
    });
    after(async () => {
      await gateway?.stop('SIGKILL');
    });
    const workerPids = () => childrenOf(gateway.child.pid!);
    const groupsSeen = async (client: ReturnType<typeof toolkitClient>, times: number) =>
      new Set(await Promise.all(Array.from({ length: times }, async () => (await client.get('live', 'echo')).body.data?.toolkit_group)));

    it('serves one port from two workers, and a toolkit change reaches both, logged once', async () => {
      expect(
        gateway.logs
          .filter((record) => record.msg === 'worker listening')
          .map((record) => record.worker)
          .sort(),
      ).to.deep.equal([1, 2]);
      expect(workerPids()).to.have.length(2);
      const client = toolkitClient(gateway.base, await loginToken(gateway.base, 'wes', passwordOf('wes')));
      expect([...(await groupsSeen(client, 10))]).to.deep.equal(['v1']);
      writeToolkit(dir, 'live.yaml', live('v2'));
      await eventually('both workers serve v2', async () => {
        const seen = await groupsSeen(client, 10);
        return seen.size === 1 && seen.has('v2');
      });
      await sleep(500);
      const reloads = gateway.logs.filter((record) => record.msg === 'toolkit reloaded' && record.toolkit === 'live');
      expect(reloads.map((record) => [record.level, record.worker])).to.deep.equal([['info', 1]]);
    });

    it("writes each worker's access line in the shape of one process's, naming the worker", async () => {
      const client = toolkitClient(gateway.base, await loginToken(gateway.base, 'wes', passwordOf('wes')));
      expect((await client.get('live', 'echo')).status).to.equal(200);
      const line = await eventually('the access line of the call', async () =>
        gateway.logs.find((record) => record.msg === 'request' && String(record.path).endsWith('/live/echo')),
      );
      expect(line).to.include({ level: 'info', method: 'GET', status: 200 });
      expect(line).not.to.have.property('text');
      expect([1, 2]).to.include(line.worker);
    });

    it('replaces a killed worker (logged), its spawn helpers go with it, and SIGTERM drains all and exits 0', async () => {
      const auth = authClient(gateway.base);
      const token = await loginToken(gateway.base, 'wes', passwordOf('wes'));
      const [victim, survivor] = workerPids() as [number, number];
      const helpers = childrenOf(victim);
      process.kill(victim, 'SIGKILL');
      await eventually('the worker is replaced', async () => gateway.logs.some((record) => record.msg === 'worker replaced'));
      const died = gateway.logs.find((record) => record.msg === 'worker died; starting another');
      expect(died).to.include({ level: 'warn', pid: victim, signal: 'SIGKILL' });
      const now = workerPids();
      expect(now).to.have.length(2);
      expect(now).to.include(survivor);
      expect(now).not.to.include(victim);
      await eventually("the dead worker's spawn helpers are gone", async () => helpers.every((pid) => !alive(pid)));
      for (let i = 0; i < 10; i++) expect((await auth.status(token)).status).to.equal(200);

      const workers = workerPids();
      expect(await gateway.stop('SIGTERM')).to.equal(0);
      expect(gateway.logs.filter((record) => record.msg === 'stopped').length).to.equal(3);
      for (const pid of workers) expect(alive(pid)).to.equal(false);
    });
  });
}

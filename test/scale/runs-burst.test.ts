import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-runs-burst-bin-');
const marks = tempDir('tkgate-runs-burst-marks-');
/** Records its start and end in one file (appends of one short line each never interleave). */
const brief = script('brief', 'echo "start $TKGATE_RUN_ID" >> "$MARKS/$DIALECT.log"; sleep 0.02; echo "end $TKGATE_RUN_ID" >> "$MARKS/$DIALECT.log"');

const CALLS = 1000;
const MAX_CONCURRENCY = 20;
/** Calls in flight at once, over the three instances: the callers' pace. */
const IN_FLIGHT = 30;

/** At most `limit` of `work` at once, in order. */
async function pooled<T>(count: number, limit: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await work(i);
      }
    }),
  );
  return results;
}

/**
 * The burst of docs/runs.md ("Claims and wake-ups"): a thousand async calls to one endpoint (max_concurrency 20,
 * max_queued 1000) spread over three real tkgate processes on one database. Every call is answered 202, every run
 * starts exactly once (counted in the database and by the command), and never more than 20 run at once.
 */
for (const dialect of dialects) {
  describe(`runs: a burst of ${CALLS} async calls over three instances (${dialect.name})`, function () {
    this.timeout(300_000);
    const s = withDatabase(dialect, [{ username: 'ann', power: 10 }]);
    const gateways: GatewayProcess[] = [];
    const ops = {
      name: 'ops',
      type: 'app',
      endpoints: [
        {
          path: 'brief',
          method: 'POST',
          type: 'exec',
          run: 'async',
          command: [brief],
          env: { MARKS: marks, DIALECT: dialect.name },
          context: 'none',
          max_concurrency: MAX_CONCURRENCY,
          max_queued: CALLS,
        },
      ],
    };

    before(async () => {
      const config = {
        db: s.bed.dbConfig,
        toolkits: { dir: toolkitDir({ 'ops.yaml': ops }), watch: false },
        plugin_options: { '@tkgate/plugin-exec': { max_processes: 32 } },
      };
      // One after another: three starting at once on a loaded machine may each miss the start deadline.
      for (let i = 0; i < 3; i++) gateways.push(await startGateway({ config }));
    });
    afterEach(function () {
      if (this.currentTest?.state !== 'failed') return;
      for (const gateway of gateways) process.stderr.write(`--- gateway ${gateway.child.pid}:\n${gateway.output().slice(-3000)}\n`);
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    });

    it('answers every call 202, starts every run exactly once, and never runs more than max_concurrency at once', async () => {
      const token = await loginToken(gateways[0]!.base, 'ann', passwordOf('ann'));
      const clients = gateways.map((gateway) => toolkitClient(gateway.base, token));
      const replies = await pooled(CALLS, IN_FLIGHT, (i) => clients[i % 3]!.post('ops', 'brief', {}));
      const refused = replies.filter((reply) => reply.status !== 202).map((reply) => `${reply.status} ${JSON.stringify(reply.body?.error ?? reply.body)}`);
      expect(refused.slice(0, 5), `${refused.length} of ${CALLS} calls not answered 202`).to.deep.equal([]);
      const ids = replies.map((reply) => reply.body.data.run_id as string);

      const db = s.bed.db;
      await eventually(
        'every run ends',
        async () => Number((await db('runs').whereIn('status', ['queued', 'running']).count({ n: '*' }).first())?.n) === 0,
        240_000,
      );
      const statuses = (await db('runs').groupBy('status').select('status').count({ n: '*' })) as Array<{ status: string; n: unknown }>;
      expect(statuses.map((row) => [row.status, Number(row.n)])).to.deep.equal([['succeeded', CALLS]]);
      const started = await db('runs').whereNotNull('started_at').count({ n: '*' }).first();
      expect(Number(started?.n)).to.equal(CALLS);

      const lines = readFileSync(path.join(marks, `${dialect.name}.log`), 'utf8')
        .trim()
        .split('\n');
      const starts = lines.filter((line) => line.startsWith('start ')).map((line) => line.slice(6));
      expect(starts, 'each run started once').to.have.length(CALLS);
      expect([...new Set(starts)].sort()).to.deep.equal([...ids].sort());
      let running = 0;
      let most = 0;
      for (const line of lines) {
        running += line.startsWith('start ') ? 1 : -1;
        most = Math.max(most, running);
      }
      expect(most, 'runs at once').to.be.at.most(MAX_CONCURRENCY);
    });
  });
}

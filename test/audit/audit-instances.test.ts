import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { eventually } from '../support/ops.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir, pluginsWithTestFunctions } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-audit-instances-');
const ok = script('ok', 'printf \'{"done":true}\'');
const DAY_MS = 86_400_000;
const CALLS_PER_INSTANCE = 24;

for (const dialect of dialects) {
  describe(`audit trail of two instances on one database [${dialect.name}]`, function () {
    this.timeout(180_000);
    const s = withDatabase(dialect, [{ username: 'ann', power: 10 }]);
    const gateways: GatewayProcess[] = [];
    const now = Date.now();

    before(async () => {
      // Events past audit.retention (1d), and one inside it, written before either instance starts.
      await s.bed.db('audit_events').insert([
        { at: now - 3 * DAY_MS, actor: 'system', action: 'old_one' },
        { at: now - 2 * DAY_MS, actor: 'system', action: 'old_two' },
        { at: now - DAY_MS / 2, actor: 'system', action: 'recent' },
      ]);
      const dir = toolkitDir({ 'jobs.yaml': { name: 'jobs', type: 'app', endpoints: [{ path: 'run', method: 'POST', type: 'exec', command: [ok] }] } });
      // A short idle timeout makes housekeeping (and so the retention purge) tick every second.
      const config = {
        db: s.bed.dbConfig,
        toolkits: { dir, watch: false },
        plugins: pluginsWithTestFunctions,
        sessions: { idle_timeout: '10s' },
        audit: { retention: '1d' },
      };
      gateways.push(...(await Promise.all([startGateway({ config }), startGateway({ config })])));
    });
    after(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop()));
    });

    it('keeps every event of concurrent calls spread over both instances', async () => {
      const calls = gateways.map(async (gateway) => {
        const client = toolkitClient(gateway.base, await loginToken(gateway.base, 'ann', passwordOf('ann')));
        return Promise.all(Array.from({ length: CALLS_PER_INSTANCE }, () => client.post('jobs', 'run', { n: 1 })));
      });
      const replies = (await Promise.all(calls)).flat();
      expect(replies.map((reply) => reply.status)).to.deep.equal(replies.map(() => 200));
      const rows = (await s.bed.db('audit_events').where({ action: 'call' }).select('request_id', 'status', 'code', 'details')) as Array<
        Record<string, unknown>
      >;
      const byRequest = new Map(rows.map((row) => [row.request_id, row]));
      expect(rows).to.have.length(2 * CALLS_PER_INSTANCE);
      for (const reply of replies) {
        const row = byRequest.get(reply.body.request_id)!;
        expect(row, reply.body.request_id).to.include({ status: 200, code: 'ok' });
        expect(JSON.parse(String(row.details))).to.deep.equal({ exit_code: 0 });
      }
    });

    it('purges events past audit.retention, on one instance only', async () => {
      await eventually('old events purged', async () => {
        const actions = (await s.bed.db('audit_events').whereIn('action', ['old_one', 'old_two', 'recent']).pluck('action')) as string[];
        return actions.length === 1 && actions[0] === 'recent';
      });
      // The line is written once the delete is done, so it may reach the test a moment after the rows are gone.
      const purgeLines = () => gateways.flatMap((gateway) => gateway.logs.filter((line) => line.msg === 'audit events purged'));
      await eventually('the purge logged', async () => purgeLines().length > 0);
      const purges = purgeLines();
      expect(purges).to.have.length(1);
      expect(purges[0]).to.include({ purged: 2 });
    });
  });
}

import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { failingTrigger } from '../support/db-locks.js';
import { scriptWriter } from '../support/executables.js';
import type { Testbed } from '../support/fixtures.js';
import { toolkitClient } from '../support/http.js';
import { eventually, scrape, valueOf } from '../support/ops.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const script = scriptWriter('tkgate-audit-required-');
const marking = script('marking', 'touch "$MARKER"; printf \'{"ran":true}\'');

/**
 * A database that refuses every new audit event, as a full disk or a withdrawn right would: a trigger that
 * raises on each insert into audit_events (test/support/db-locks.ts). Dropped to allow again.
 */
const refuseAuditInserts = (bed: Testbed): Promise<() => Promise<void>> =>
  failingTrigger(bed, 'refuse_audit', 'INSERT', 'audit_events', bed.dbConfig.client === 'sqlite' ? 'database or disk is full' : 'refused');

for (const dialect of dialects) {
  for (const required of [true, false]) {
    describe(`audit.required ${required}, audit events refused [${dialect.name}]`, function () {
      this.timeout(120_000);
      const work = tempDir('tkgate-audit-marker-');
      const tools = {
        name: 'tools',
        type: 'app',
        endpoints: [
          { path: 'mark', method: 'POST', type: 'exec', command: [marking], env: { MARKER: path.join(work, 'ran') } },
          { path: 'mark-unaudited', method: 'POST', type: 'exec', command: [marking], env: { MARKER: path.join(work, 'ran-unaudited') }, audit: false },
        ],
      };
      const s = withGateway(dialect, [{ username: 'ann', power: 10 }], { audit: { required } }, { toolkitsDir: toolkitDir({ 'tools.yaml': tools }) });
      let allow: () => Promise<void>;
      // The trigger goes with the suite's database.
      before(async () => (allow = await refuseAuditInserts(s.bed)));

      if (required)
        it('an audited call is refused with 503 unavailable and its command never runs; an unaudited one runs', async () => {
          const client = toolkitClient(s.gateway.base, await s.login('ann'));
          const refused = await client.post('tools', 'mark', {});
          expect(refused.status).to.equal(503);
          expect(refused.body.error.code).to.equal('unavailable');
          expect(refused.headers.get('retry-after')).to.equal('1');
          expect(existsSync(path.join(work, 'ran'))).to.equal(false);
          expect((await client.post('tools', 'mark-unaudited', {})).status).to.equal(200);
          expect(existsSync(path.join(work, 'ran-unaudited'))).to.equal(true);
          const line = s.gateway.logs.find((entry) => entry.msg === 'audit event not written' && entry.request_id === refused.body.request_id)!;
          expect(line).to.include({ level: 'error', action: 'call', toolkit: 'tools', endpoint: 'mark' });

          await allow();
          const again = await client.post('tools', 'mark', {});
          expect(again.status).to.equal(200);
          expect(existsSync(path.join(work, 'ran'))).to.equal(true);
          rmSync(path.join(work, 'ran'));
        });
      else
        it('an audited call runs, the failure is logged as an error and counted in tkgate_audit_write_failures_total', async () => {
          const client = toolkitClient(s.gateway.base, await s.login('ann'));
          const before = valueOf((await scrape(s.gateway)).samples, 'tkgate_audit_write_failures_total');
          const reply = await client.post('tools', 'mark', {});
          expect(reply.status).to.equal(200);
          expect(reply.body.data).to.deep.equal({ ran: true });
          expect(existsSync(path.join(work, 'ran'))).to.equal(true);
          await eventually('the failure counted', async () => valueOf((await scrape(s.gateway)).samples, 'tkgate_audit_write_failures_total') > before);
          expect(
            s.gateway.logs.some((entry) => entry.msg === 'audit event not written' && entry.level === 'error' && entry.request_id === reply.body.request_id),
          ).to.equal(true);
        });
    });
  }
}

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM, launchBrowser } from '../support/browser.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { passwordOf } from '../support/fixtures.js';
import { call, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { startSshdNodes, type SshdFleet } from '../support/sshd-nodes.js';
import { withGateway } from '../support/suite.js';
import { writeToolkit } from '../support/toolkit-files.js';
import { nodeOn } from '../fleet/fleet-support.js';

const sqlite = dialects.filter((dialect) => dialect.name === 'sqlite');

/**
 * A fleet run's page in Debian's Chromium (docs/fleet.md, docs/console.md): the node counts, the node table paged by
 * the server and filtered by status, and one node's output at a time. 62 node names on two real sshd servers.
 */
for (const dialect of sqlite) {
  describe(`the console: a fleet run's page (${dialect.name})`, function () {
    this.timeout(240_000);
    const dir = tempDir('tkgate-console-fleet-');
    const toolkits = tempDir('tkgate-console-fleet-toolkits-');
    const inventoryFile = path.join(dir, 'nodes.json');
    let fleet: SshdFleet;
    let browser: Browser | undefined;
    before(async function () {
      const probe = await launchBrowser();
      if (!probe) this.skip();
      await probe!.close();
      // Quiet logins: a login that reads root's rc files (seconds each on a loaded host) would outlast connect_timeout.
      fleet = await startSshdNodes(2, { quietLogins: true });
      const nodes = Array.from({ length: 60 }, (_, i) => nodeOn(fleet, i % 2, `node-${String(i).padStart(3, '0')}`, { labels: { role: 'web' } }));
      nodes.push(nodeOn(fleet, 0, 'lost-1', { labels: { role: 'web' }, port: 1 }), nodeOn(fleet, 1, 'lost-2', { labels: { role: 'web' }, port: 1 }));
      writeFileSync(inventoryFile, JSON.stringify(nodes));
      writeToolkit(toolkits, 'fleet.yaml', {
        name: 'fleet',
        type: 'app',
        endpoints: [
          {
            path: 'hello',
            method: 'POST',
            type: 'ssh',
            nodes: { match: { role: 'web' } },
            command: ['sh', '-c', 'echo "hello from server $TKGATE_TEST_SSHD"'],
            context: 'none',
            // sshd drops unauthenticated connections past MaxStartups (10 by default): a few at once per server.
            parallel: 8,
            keep_going: true,
            // Generous: on a loaded machine a reachable node must not end unreachable (the lost ones are refused at once).
            connect_timeout: '15s',
            ssh: { key: { secret: `file:${path.join(fleet.dir, 'user_ed25519')}` } },
          },
        ],
      });
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    });
    after(async () => {
      await browser?.close();
      await fleet?.stop();
    });
    const s = withGateway(dialect, [{ username: 'ana', power: 100 }], { fleet: { inventory: [{ file: inventoryFile }] } }, { toolkitsDir: toolkits });

    async function runPage(id: string): Promise<Page> {
      const tab = await (await browser!.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
      tab.on('pageerror', (err) => console.error('    page error:', err.message));
      await tab.goto(`${s.gateway.base}/console/`);
      await tab.getByLabel('Username').fill('ana');
      await tab.getByLabel('Password').fill(passwordOf('ana'));
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.locator('#who').filter({ hasText: 'ana' }).waitFor({ timeout: 30_000 });
      await tab.goto(`${s.gateway.base}/console/#/runs/${id}`);
      return tab;
    }

    it('shows the node counts, pages and filters the node table on the server, and one node’s output', async () => {
      const token = await s.login('ana');
      const reply = await toolkitClient(s.gateway.base, token).post('fleet', 'hello', {});
      expect(reply.status).to.equal(202);
      const id = reply.body.data.run_id as string;
      await eventually(
        'the run ends',
        async () => {
          const run = (await call('GET', `${s.gateway.base}/runs/${id}`, { token })).body.data;
          return run.status === 'failed' ? run : undefined;
        },
        60_000,
      );
      const tab = await runPage(id);
      await tab.locator('#node-counts').filter({ hasText: '60 succeeded · 2 failed' }).waitFor({ timeout: 60_000 });
      // A page of 50 by name, then the rest.
      await tab.locator('#nodes tbody tr').first().waitFor({ timeout: 60_000 });
      expect(await tab.locator('#nodes tbody tr').count()).to.equal(50);
      expect(await tab.locator('#nodes tbody tr').first().getAttribute('data-node')).to.equal('lost-1');
      await tab.getByRole('button', { name: 'Next page' }).click();
      await tab
        .locator('#nodes caption')
        .filter({ hasText: /^12 nodes/ })
        .waitFor({ timeout: 60_000 });
      expect(await tab.getByRole('button', { name: 'Next page' }).isHidden()).to.equal(true);
      // Filtered by status: the two nodes that failed, with their reason (the caption matched from its start: "12 nodes"
      // holds "2 nodes", and the page before would pass for it).
      await tab.getByLabel('Node status').selectOption('failed');
      await tab
        .locator('#nodes caption')
        .filter({ hasText: /^2 nodes/ })
        .waitFor({ timeout: 60_000 });
      expect(await tab.locator('#nodes tbody tr td:nth-child(4)').allTextContents()).to.deep.equal(['unreachable', 'unreachable']);
      // One node's output at a time.
      await tab.getByLabel('Node status').selectOption('succeeded');
      await tab
        .locator('#nodes caption')
        .filter({ hasText: /^50 nodes/ })
        .waitFor({ timeout: 60_000 });
      await tab.getByRole('button', { name: 'node-001' }).click();
      await tab.locator('#node-output').filter({ hasText: 'hello from server 1' }).waitFor({ timeout: 60_000 });
      await tab.getByRole('button', { name: 'node-002' }).click();
      await tab.locator('#node-output').filter({ hasText: 'hello from server 0' }).waitFor({ timeout: 60_000 });
      expect(await tab.locator('#node-output').textContent()).not.to.include('server 1');
      expect(await tab.locator('#node-output-title').textContent()).to.equal('Output of node-002');
    });
  });
}

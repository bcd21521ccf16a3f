import { expect } from 'chai';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM, launchBrowser } from '../support/browser.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { call, toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { signingKey, WebhookReceiver } from '../support/webhook-receiver.js';

const script = scriptWriter('tkgate-console-notify-bin-');
const fails = script('fails', 'exit 2');
process.env.CONSOLE_NOTIFY_KEY = signingKey();
const receiver = new WebhookReceiver({ '/down': () => 503 });
await receiver.start();
after(() => receiver.stop());

const sqlite = dialects.filter((dialect) => dialect.name === 'sqlite');

/** The console's Notifications page (docs/console.md) in Debian's Chromium: the delivery log with its attempts, and redeliver. */
for (const dialect of sqlite) {
  describe(`the console's notifications page in a real browser (${dialect.name})`, function () {
    this.timeout(120_000);
    let browser: Browser | undefined;
    const s = withGateway(
      dialect,
      [
        { username: 'ana', power: 100 },
        { username: 'bob', power: 10 },
      ],
      {
        notifications: {
          sinks: [{ name: 'ops', url: receiver.url('/down'), format: 'standard-webhooks', secret: { secret: 'env:CONSOLE_NOTIFY_KEY' } }],
          retry_base: '50ms',
          max_attempts: 2,
        },
      },
      {
        toolkitsDir: toolkitDir({
          'ops.yaml': {
            name: 'ops',
            type: 'app',
            endpoints: [{ path: 'nightly', method: 'POST', type: 'exec', run: 'async', command: [fails], notify: [{ on: ['run.failed'], sink: 'ops' }] }],
          },
        }),
      },
    );
    before(async function () {
      const probe = await launchBrowser();
      if (!probe) this.skip();
      await probe!.close();
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    });
    after(() => browser?.close());

    it('shows each delivery with its attempts to admins, and a redeliver sends it again', async () => {
      const bob = await s.login('bob');
      const run = await toolkitClient(s.gateway.base, bob).post('ops', 'nightly', {});
      expect(run.status).to.equal(202);
      const id = run.body.data.run_id as string;
      const root = await s.login('ana');
      await eventually('the delivery failed', async () => {
        const reply = await call('GET', `${s.gateway.base}/admin/notifications?status=failed`, { token: root });
        return reply.body.data.deliveries.length === 1 ? true : undefined;
      });

      const context = await browser!.newContext({ viewport: { width: 1200, height: 800 } });
      const tab = await context.newPage();
      tab.on('pageerror', (err) => console.error('    page error:', err.message));
      await tab.goto(`${s.gateway.base}/console/`);
      await tab.getByLabel('Username').fill('ana');
      await tab.getByLabel('Password').fill(passwordOf('ana'));
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.getByRole('link', { name: 'Notifications' }).click();
      await tab.getByRole('heading', { name: 'Notifications' }).waitFor();
      const row = tab.locator('tbody tr').filter({ hasText: 'run.failed' });
      await row.waitFor({ timeout: 20_000 });
      expect(await row.locator('td').nth(3).textContent()).to.equal('ops');
      expect(await row.locator('td').nth(4).textContent()).to.equal('failed');
      await row.getByText('2 attempt(s)').click();
      const attempts = await row.locator('li').allTextContents();
      expect(attempts).to.have.length(2);
      for (const attempt of attempts) expect(attempt).to.include('503');
      expect(await row.getByRole('link').getAttribute('href')).to.equal(`#/runs/${id}`);

      await row.getByRole('button', { name: /^Redeliver/ }).click();
      await tab.getByRole('status').filter({ hasText: 'will be sent again' }).waitFor();
      await eventually('two more attempts', () => (receiver.at('/down').filter((entry) => entry.body.includes(id)).length >= 4 ? true : undefined));
      await tab.getByRole('button', { name: 'Filter' }).click();
      await tab.locator('tbody tr').filter({ hasText: '4 attempt(s)' }).waitFor({ timeout: 20_000 });

      const other = await browser!.newContext();
      const bobTab = await other.newPage();
      await bobTab.goto(`${s.gateway.base}/console/`);
      await bobTab.getByLabel('Username').fill('bob');
      await bobTab.getByLabel('Password').fill(passwordOf('bob'));
      await bobTab.getByRole('button', { name: 'Sign in' }).click();
      await bobTab.locator('#who').filter({ hasText: 'bob' }).waitFor({ timeout: 30_000 });
      expect(await bobTab.getByRole('link', { name: 'Notifications' }).count()).to.equal(0);
      await other.close();
      await context.close();
    });
  });
}

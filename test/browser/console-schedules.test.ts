import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM, launchBrowser } from '../support/browser.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { call } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const report = scriptWriter('tkgate-console-schedules-bin-')('report', 'echo "{}"');

const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    {
      path: 'report',
      method: 'POST',
      type: 'exec',
      run: 'async',
      command: [report],
      schedule: [
        { name: 'often', cron: '*/2 * * * * *', as: 'bob', overlap: 'allow' },
        { name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/Berlin', as: 'bob' },
      ],
    },
  ],
};

/** The console's Schedules page (docs/console.md) in Debian's Chromium against a gateway on SQLite. */
for (const dialect of dialects.filter((each) => each.name === 'sqlite')) {
  describe(`the console's Schedules page in a real browser (${dialect.name})`, function () {
    this.timeout(120_000);
    let browser: Browser | undefined;
    const s = withGateway(
      dialect,
      [
        { username: 'ana', power: 100 },
        { username: 'bob', power: 10 },
      ],
      {},
      { toolkitsDir: toolkitDir({ 'ops.yaml': ops }) },
    );
    before(async function () {
      const probe = await launchBrowser();
      if (!probe) this.skip();
      await probe!.close();
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    });
    after(() => browser?.close());

    async function signedIn(username: string): Promise<Page> {
      const tab = await (await browser!.newContext({ viewport: { width: 1200, height: 800 } })).newPage();
      tab.on('pageerror', (err) => console.error('    page error:', err.message));
      await tab.goto(`${s.gateway.base}/console/`);
      await tab.getByLabel('Username').fill(username);
      await tab.getByLabel('Password').fill(passwordOf(username));
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.locator('#who').filter({ hasText: username }).waitFor({ timeout: 30_000 });
      return tab;
    }

    it('shows next fire and last outcome, pauses and resumes, and lists one schedule’s fires with their runs', async () => {
      const tab = await signedIn('ana');
      await tab.getByRole('link', { name: 'Schedules' }).click();
      await tab.getByRole('heading', { name: 'Schedules' }).waitFor();
      const often = tab.locator('tr[data-schedule="ops/report#often"]');
      await often.waitFor({ timeout: 20_000 });
      // The every-2-seconds schedule has fired by the time the page is read again.
      await eventually('a last fire shown', async () => {
        if ((await often.locator('td.last').textContent())?.includes('started')) return true;
        await tab.reload();
        await often.waitFor();
        return undefined;
      });
      expect(await tab.locator('tr[data-schedule="ops/report#nightly"] td.state').textContent()).to.equal('active');

      await often.getByRole('button', { name: 'Pause' }).click();
      await often.locator('td.state').filter({ hasText: 'paused' }).waitFor();
      const token = await s.login('ana');
      const fires = `${s.gateway.base}/schedules/${encodeURIComponent('ops/report#often')}/fires?limit=5`;
      await eventually(
        'a fire skipped while paused',
        async () => (await call('GET', fires, { token })).body.data.fires.some((fire: { reason: string | null }) => fire.reason === 'paused') || undefined,
      );
      await often.getByRole('button', { name: 'Resume' }).click();
      await often.locator('td.state').filter({ hasText: 'active' }).waitFor();
      const listed = await call('GET', `${s.gateway.base}/schedules`, { token });
      expect(listed.body.data.schedules.find((entry: { id: string }) => entry.id === 'ops/report#often').paused).to.equal(false);

      await often.getByRole('link', { name: 'ops/report#often' }).click();
      await tab.getByRole('heading', { name: 'ops/report#often' }).waitFor();
      await tab.locator('td.outcome').filter({ hasText: 'skipped' }).first().waitFor({ timeout: 20_000 });
      expect(await tab.locator('td.outcome').allTextContents()).to.include('started');
      await tab.locator('tbody a[href^="#/runs/"]').first().click();
      await tab.getByRole('heading', { level: 1 }).filter({ hasText: /^Run / }).waitFor();
      await tab.context().close();
    });

    it('shows a caller who may not pause the refusal, and changes nothing', async () => {
      const tab = await signedIn('bob');
      await tab.getByRole('link', { name: 'Schedules' }).click();
      const nightly = tab.locator('tr[data-schedule="ops/report#nightly"]');
      await nightly.getByRole('button', { name: 'Pause' }).click();
      await tab.getByRole('status').filter({ hasText: 'may not pause' }).waitFor();
      expect(await nightly.locator('td.state').textContent()).to.equal('active');
      await tab.context().close();
    });
  });
}

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM, launchBrowser } from '../support/browser.js';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { call } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { inventory, inventoryTables, PLANTED } from '../parameters/inventory-fixture.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The console's forms for fields with choices_from and secret fields (docs/console.md), in Debian's Chromium: each
 * caller's own choices with their labels, a cascade (the hosts reload when the environment changes), a password
 * input for the secret, and a run page that never shows it. One gateway on SQLite, as the console suite.
 */
for (const dialect of dialects.filter((each) => each.name === 'sqlite')) {
  describe(`the console's choices and secret fields in a real browser (${dialect.name})`, function () {
    this.timeout(120_000);
    let browser: Browser | undefined;
    const s = withGateway(
      dialect,
      [
        { username: 'ana', power: 10 },
        { username: 'bob', power: 10 },
      ],
      {},
      { toolkitsDir: toolkitDir({ 'inv.yaml': inventory }), prepare: inventoryTables },
    );
    before(async function () {
      const probe: BrowserContext | undefined = await launchBrowser();
      if (!probe) this.skip();
      await probe!.close();
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    });
    after(() => browser?.close());

    async function signedIn(username: string): Promise<Page> {
      const context = await browser!.newContext({ viewport: { width: 1200, height: 800 } });
      const tab = await context.newPage();
      tab.on('pageerror', (err) => console.error('    page error:', err.message));
      await tab.goto(`${s.gateway.base}/console/`);
      await tab.getByLabel('Username').fill(username);
      await tab.getByLabel('Password').fill(passwordOf(username));
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.locator('#who').filter({ hasText: username }).waitFor({ timeout: 30_000 });
      await tab.getByLabel('Search endpoints').fill('inv deploy');
      const form = tab.locator('form[data-operation="tk.app.inv.deploy.post"]');
      await form.locator('xpath=..').locator('summary').click();
      return tab;
    }
    const optionsOf = (tab: Page, name: string) => tab.locator(`form[data-operation="tk.app.inv.deploy.post"] select[name="${name}"] option`);
    const shows = async (tab: Page, name: string, texts: string[]) => {
      await optionsOf(tab, name)
        .filter({ hasText: texts.at(-1)! })
        .first()
        .waitFor({ state: 'attached', timeout: 20_000 });
      expect(await optionsOf(tab, name).allTextContents()).to.deep.equal(texts);
    };

    it("fills the selects with the caller's own choices, reloads the hosts on a new environment, and never shows the token", async () => {
      const tab = await signedIn('ana');
      const form = tab.locator('form[data-operation="tk.app.inv.deploy.post"]');
      await shows(tab, 'env', ['—', 'Production', 'Staging']);
      await shows(tab, 'host', ['choose env first']);
      expect(await form.locator('input[name="token"]').getAttribute('type')).to.equal('password');
      await form.locator('select[name="env"]').selectOption('prod');
      await shows(tab, 'host', ['—', 'Web 1 (prod)']);
      await form.locator('select[name="env"]').selectOption('staging');
      await shows(tab, 'host', ['—', 'Web 2 (staging)']);
      // The selects and the password input are labelled controls: no serious axe-core violation.
      await tab.evaluate(axeSource);
      const violations = (await tab.evaluate(async () => {
        const page = globalThis as unknown as {
          axe: { run(node: unknown): Promise<{ violations: Array<{ id: string; impact: string }> }> };
          document: unknown;
        };
        return (await page.axe.run(page.document)).violations.map((each) => ({ id: each.id, impact: each.impact }));
      })) as Array<{ id: string; impact: string }>;
      expect(violations.filter((each) => each.impact === 'serious' || each.impact === 'critical')).to.deep.equal([]);
      await form.locator('select[name="host"]').selectOption('web-2');
      await form.locator('input[name="token"]').fill(PLANTED);
      await form.getByRole('button', { name: 'Call POST' }).click();
      await tab.waitForURL(/#\/runs\/[^/]+$/, { timeout: 20_000 });
      const runId = decodeURIComponent(new URL(tab.url()).hash.slice('#/runs/'.length));
      await tab.locator('#run-status').filter({ hasText: 'awaiting_approval' }).waitFor({ timeout: 30_000 });
      await tab.getByText('***').first().waitFor({ state: 'attached', timeout: 20_000 });
      expect(await tab.content()).not.to.include(PLANTED);
      const run = await call('GET', `${s.gateway.base}/runs/${runId}`, { token: await s.login('ana') });
      expect(run.body.data.payload).to.deep.equal({ env: 'staging', host: 'web-2', token: '***' });
      await tab.context().close();
    });

    it("shows another caller their own hosts, and a choices endpoint's failure at the field", async () => {
      const tab = await signedIn('bob');
      const form = tab.locator('form[data-operation="tk.app.inv.deploy.post"]');
      await shows(tab, 'env', ['—', 'Production', 'Staging']);
      await form.locator('select[name="env"]').selectOption('prod');
      await shows(tab, 'host', ['—', 'Database 1']);
      await tab.getByLabel('Search endpoints').fill('inv broken');
      const broken = tab.locator('form[data-operation="tk.app.inv.broken.post"]');
      await broken.locator('xpath=..').locator('summary').click();
      await broken
        .locator('[data-field="site"] .field-error')
        .filter({ hasText: /502 choices_failed/ })
        .waitFor({ timeout: 20_000 });
      await tab.context().close();
    });
  });
}

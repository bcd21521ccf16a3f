import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { BrowserContext } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { dialects } from '../support/databases.js';
import { repoRoot } from '../support/paths.js';
import { serveDirectory, type StaticServer } from '../support/static-server.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';
import { withSso } from './sso-suite.js';

/** The example client of examples/browser-client/ signing in through the real provider's pages, in headless Chromium. */
const clientDir = path.join(repoRoot, 'examples/browser-client');
const screenshotDir = path.join(repoRoot, 'build/screenshots');

for (const dialect of dialects) {
  describe(`single sign-on in a real browser (${dialect.name})`, function () {
    this.timeout(90_000);
    const cors = { origins: [] as string[] };
    const returnTo: string[] = [];
    let page: StaticServer;
    let browser: BrowserContext | undefined;
    before(async function () {
      browser = await launchBrowser();
      if (!browser) this.skip();
      page = await serveDirectory(clientDir);
      cors.origins.push(page.origin);
      returnTo.push(`${page.origin}/index.html`);
    });
    const s = withSso(dialect, {
      provider: { return_to: returnTo },
      config: {
        server: { port: 0, cors },
        toolkits: { dir: toolkitDir({ 'desk.yaml': { name: 'desk', type: 'app', endpoints: [echoEndpoint({ method: 'GET' })] } }), watch: false },
        plugins: pluginsWithTestFunctions,
      },
    });
    after(async () => {
      await browser?.close();
      await page?.close();
    });

    it("signs in at the provider's login form, exchanges the login_code, calls a toolkit endpoint and logs out", async () => {
      s.idp.addAccount({ sub: 'u-2001', claims: { preferred_username: 'erin', groups: ['staff'] } });
      const tab = await browser!.newPage();
      await tab.goto(`${page.origin}/index.html?gateway=${encodeURIComponent(s.base)}`);
      await tab.click('#sso-login');

      // The provider's own pages: its login form, then its consent page.
      await tab.waitForSelector('input[name="login"]').catch((err: Error) => {
        throw new Error(`no login form at ${tab.url()}: ${err.message}`);
      });
      expect(new URL(tab.url()).origin).to.equal(s.idp.issuer);
      await tab.fill('input[name="login"]', 'u-2001');
      await tab.fill('input[name="password"]', 'correct horse battery staple');
      await tab.click('button[type="submit"]');
      await tab.waitForSelector('button:has-text("Continue")');
      await tab.click('button:has-text("Continue")');

      // Back on the page: the fragment read and dropped, the code exchanged.
      await tab.waitForSelector('#who:has-text("Signed in as erin (power 10)")', { timeout: 30_000 });
      expect(new URL(tab.url()).hash, 'the login_code is gone from the address bar').to.equal('');
      const form = tab.locator('form[data-operation="tk.app.desk.echo.get"]');
      await form.locator('button[type="submit"]').click();
      const envelope = JSON.parse((await form.locator('pre.envelope').textContent({ timeout: 20_000 }))!);
      expect(envelope.success).to.equal(true);
      expect(envelope.data.username).to.equal('erin');

      mkdirSync(screenshotDir, { recursive: true });
      await tab.screenshot({ path: path.join(screenshotDir, `browser-sso-${dialect.name}.png`), fullPage: true });

      await tab.click('#logout');
      await tab.waitForSelector('#who:has-text("Logged out.")');
      expect(await tab.locator('#end-session').getAttribute('href')).to.match(new RegExp(`^${s.idp.issuer}/session/end\\?`));
      expect(Number((await s.bed.db('sessions').count({ n: '*' }).first())!.n)).to.equal(0);
      await tab.close();
    });
  });
}

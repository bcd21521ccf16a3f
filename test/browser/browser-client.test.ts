import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { repoRoot } from '../support/paths.js';
import { serveDirectory, type StaticServer } from '../support/static-server.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, toolkitDir } from '../support/toolkit-files.js';

/** The example client of examples/browser-client/, in headless Chromium, on origins apart from the gateway's. */
const clientDir = path.join(repoRoot, 'examples/browser-client');
const screenshotDir = path.join(repoRoot, 'build/screenshots');

const desk = {
  name: 'desk',
  type: 'app',
  description: 'A desk for the browser test.',
  endpoints: [
    echoEndpoint({
      method: 'GET',
      description: 'Answers with the request context it was given.',
      client_filter: { allowed_fields: ['q', 'n'], required_fields: ['q'], field_rules: { q: { type: 'string', max_length: 20 }, n: { type: 'integer' } } },
    }),
    echoEndpoint({
      path: 'tickets',
      method: 'POST',
      description: 'Files a ticket (answers with the request context).',
      client_filter: {
        allowed_fields: ['title', 'status'],
        required_fields: ['title'],
        allowed_content_types: ['application/json'],
        field_rules: { title: { type: 'string', max_length: 40, pattern: '^[^<>]+$' }, status: { type: 'string', allowed_values: ['open', 'done'] } },
      },
    }),
    echoEndpoint({ path: 'vault', permissions: { min_power: 50 } }),
  ],
};

for (const dialect of dialects) {
  describe(`the example browser client in Chromium (${dialect.name})`, function () {
    this.timeout(60_000);
    const cors = { origins: [] as string[] };
    let listed: StaticServer;
    let unlisted: StaticServer;
    let browser: BrowserContext | undefined;
    before(async function () {
      browser = await launchBrowser();
      if (!browser) this.skip();
      [listed, unlisted] = await Promise.all([serveDirectory(clientDir), serveDirectory(clientDir)]);
      cors.origins.push(listed.origin);
    });
    const s = withGateway(dialect, [{ username: 'uma', power: 10 }], { server: { port: 0, cors } }, { toolkitsDir: toolkitDir({ 'desk.yaml': desk }) });
    after(async () => {
      await browser?.close();
      await Promise.all([listed?.close(), unlisted?.close()]);
    });

    const sessionsOfUma = async () => (await s.bed.db('sessions').where({ user_id: s.ids.uma }).count({ n: '*' }))[0]!.n;

    async function openClient(origin: string): Promise<Page> {
      const page = await browser!.newPage();
      await page.goto(`${origin}/index.html?gateway=${encodeURIComponent(s.gateway.base)}`);
      await page.fill('#username', 'uma');
      await page.fill('#password', passwordOf('uma'));
      await page.click('#login');
      return page;
    }

    it('logs in from a listed origin, lists the endpoints, calls one with the token, reads X-Request-Id, logs out', async () => {
      const page = await openClient(listed.origin);
      await page.waitForSelector('#who:has-text("Logged in as uma")');
      const form = page.locator('form[data-operation="tk.app.desk.echo.get"]');
      await form.waitFor();
      expect(await page.locator('form[data-operation^="tk.app.desk.vault"]').count(), "above the caller's power").to.equal(0);
      expect(await form.locator('.required').allTextContents()).to.deep.equal(['q (≤ 20)']);

      await form.locator('input[name="q"]').fill('hello');
      await form.locator('input[name="n"]').fill('7');
      await form.locator('button[type="submit"]').click();
      const envelopeText = await form.locator('pre.envelope').textContent({ timeout: 20_000 });
      const envelope = JSON.parse(envelopeText!);
      expect(envelope.success).to.equal(true);
      expect(envelope.data.username).to.equal('uma');
      expect(envelope.data.payload).to.deep.equal({ q: 'hello', n: 7 });
      expect(await form.locator('.request-id').textContent(), 'X-Request-Id read by the page').to.equal(envelope.request_id);
      expect(await sessionsOfUma()).to.equal(1);

      const tickets = page.locator('form[data-operation="tk.app.desk.tickets.post"]');
      await tickets.locator('input[name="title"]').fill('renew certs');
      await tickets.locator('select[name="status"]').selectOption({ label: 'done' });
      await tickets.locator('button[type="submit"]').click();
      const posted = JSON.parse((await tickets.locator('pre.envelope').textContent({ timeout: 20_000 }))!);
      expect(posted.data.payload, 'a JSON body from the form').to.deep.equal({ title: 'renew certs', status: 'done' });

      mkdirSync(screenshotDir, { recursive: true });
      await page.screenshot({ path: path.join(screenshotDir, `browser-client-${dialect.name}.png`), fullPage: true });

      await page.click('#logout');
      await page.waitForSelector('#who:has-text("Logged out.")');
      expect(await sessionsOfUma()).to.equal(0);
      await page.close();
    });

    it('is refused from an origin that is not listed: the login never reaches the gateway', async () => {
      const page = await openClient(unlisted.origin);
      await page.waitForSelector('#error:has-text("does not allow its origin")');
      expect(await page.locator('#who').isHidden()).to.equal(true);
      expect(await sessionsOfUma()).to.equal(0);
      await page.close();
    });
  });
}

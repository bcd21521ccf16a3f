import { mkdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM, launchBrowser } from '../support/browser.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { passwordOf } from '../support/fixtures.js';
import { call } from '../support/http.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { pluginsWithTestFunctions, toolkitDir, echoEndpoint } from '../support/toolkit-files.js';
import { startUpstream, type Upstream } from '../support/upstream.js';
import { withSso } from '../sso/sso-suite.js';
import { withGateway } from '../support/suite.js';

/**
 * The console (docs/console.md) in Debian's Chromium against a real gateway process on SQLite: every page,
 * sign-in by password and by OIDC, a form's 400 at its field, a live run and its cancel, a key made in the
 * page and used from outside it, output that holds markup shown as text, and axe-core on every page.
 * Screenshots go to build/screenshots/; with TKGATE_UPDATE_SCREENSHOTS=1 also to docs/images/.
 */
const screenshotDir = path.join(repoRoot, 'build/screenshots');
const docsImages = path.join(repoRoot, 'docs/images');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const script = scriptWriter('tkgate-console-bin-');
const goDir = tempDir('tkgate-console-go-');
/** A line, then waits for the test (a file appears), another line, then runs until cancelled. */
const live = script('live', 'echo "first line"; while [ ! -e "$GO_DIR/$TKGATE_RUN_ID" ]; do sleep 0.05; done; echo "second line"; while :; do sleep 0.1; done');
/** Output that a page rendering markup would run: it must show as text and run nothing. */
const hostile = script(
  'hostile',
  `printf '%s\\n' '<img src=x onerror="window.__pwned=1">' '<script>window.__pwned=2</script>' '<b>bold?</b>'; printf '\\033[31mred\\033[0m\\n'`,
);

/** A deploy that needs a second person; its dry run says what it would do. */
const deploy = script('deploy', 'echo "deployed $1"');
const dryDeploy = script('dry-deploy', 'echo "would deploy: 3 hosts"');

/** A push hook's secret (docs/triggers.md): the page names the scheme and the user, never this. */
const HOOK_SECRET = 'console-hook-secret-71c3';
const hookSecret = path.join(tempDir('tkgate-console-hook-'), 'hook-secret');
writeFileSync(hookSecret, HOOK_SECRET);

const upstream: Upstream = await startUpstream(64);
after(() => upstream.close());

const desk = {
  name: 'desk',
  type: 'app',
  endpoints: [
    echoEndpoint({
      description: 'Says back what it was given',
      client_filter: {
        allowed_fields: ['name', 'count', 'colour', 'loud'],
        required_fields: ['name'],
        field_rules: {
          name: { type: 'string', max_length: 12, pattern: '^[a-z]+$' },
          count: { type: 'integer' },
          colour: { allowed_values: ['red', 'blue'] },
          loud: { type: 'boolean' },
        },
      },
    }),
    { path: 'file', method: 'GET', type: 'http', upstream: { url: `${upstream.url}/file`, passthrough: true } },
  ],
};
const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    { path: 'live', method: 'POST', type: 'exec', run: 'async', command: [live], env: { GO_DIR: goDir } },
    { path: 'hostile', method: 'POST', type: 'exec', run: 'async', command: [hostile] },
    {
      path: 'deploy',
      method: 'POST',
      type: 'exec',
      run: 'async',
      command: [deploy],
      client_filter: { allowed_fields: ['service'], field_rules: { service: { type: 'string', max_length: 20 } } },
      audit_fields: ['service'],
      approval: { approvers: { min_power: 50 }, dry_run: [dryDeploy] },
    },
    {
      path: 'hook',
      method: 'POST',
      type: 'exec',
      run: 'async',
      command: [deploy],
      trigger: { verify: 'github', secret: { secret: `file:${hookSecret}` }, as: 'bob' },
    },
  ],
};

/** A REST service behind the gateway (forward: request): any path and query by GET, one host by PUT or PATCH; and a WebSocket. */
const rest = {
  name: 'rest',
  type: 'app',
  endpoints: [
    { path: '*', method: ['GET', 'HEAD'], type: 'http', upstream: { url: `${upstream.url}/v1`, forward: 'request' } },
    { path: 'hosts/{name}', method: ['PUT', 'PATCH'], type: 'http', upstream: { url: `${upstream.url}/v1/hosts/{name}`, forward: 'request' } },
    { path: 'live', method: 'GET', type: 'http', websocket: true, upstream: { url: 'ws://127.0.0.1:9/live' } },
  ],
};

const sqlite = dialects.filter((dialect) => dialect.name === 'sqlite');

for (const dialect of sqlite) {
  describe(`the console in a real browser (${dialect.name})`, function () {
    this.timeout(120_000);
    let browser: Browser | undefined;
    const s = withSso(dialect, {
      users: [
        { username: 'ana', power: 100 },
        { username: 'bob', power: 10 },
      ],
      config: {
        server: { port: 0 },
        toolkits: { dir: toolkitDir({ 'desk.yaml': desk, 'ops.yaml': ops, 'rest.yaml': rest }), watch: false },
        plugins: pluginsWithTestFunctions,
      },
    });
    before(async function () {
      const probe: BrowserContext | undefined = await launchBrowser();
      if (!probe) this.skip();
      await probe!.close();
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
      });
    });
    after(() => browser?.close());
    const consoleUrl = () => `${s.base}/console/`;

    /** A fresh browser context (its own sessionStorage and cookies) on the console's sign-in page. */
    async function openConsole(): Promise<Page> {
      const context = await browser!.newContext({ viewport: { width: 1200, height: 800 } });
      const tab = await context.newPage();
      tab.on('pageerror', (err) => console.error('    page error:', err.message));
      await tab.goto(consoleUrl());
      return tab;
    }

    async function signIn(tab: Page, username: string): Promise<void> {
      await tab.getByLabel('Username').fill(username);
      await tab.getByLabel('Password').fill(passwordOf(username));
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.locator('#who').filter({ hasText: username }).waitFor({ timeout: 30_000 });
    }

    /** The value of a run page's fact (its `dd`) named `name`. */
    const factOf = (tab: Page, name: string) =>
      tab
        .locator('dl.facts dt')
        .filter({ hasText: new RegExp(`^${name}$`) })
        .locator('xpath=following-sibling::dd[1]');

    /** From the console's sign-in page through the provider's own login and consent pages, as `sub`. */
    async function signInAtProvider(tab: Page, sub: string): Promise<void> {
      await tab.getByRole('link', { name: 'corp' }).click();
      await tab.waitForSelector('input[name="login"]', { timeout: 30_000 });
      await tab.fill('input[name="login"]', sub);
      await tab.fill('input[name="password"]', 'correct horse battery staple');
      await tab.click('button[type="submit"]');
      await tab.waitForSelector('button:has-text("Continue")');
      await tab.click('button:has-text("Continue")');
    }

    /** No serious or critical axe-core violation, and a screenshot (build/, and docs/images/ when asked). */
    async function checkPage(tab: Page, name: string): Promise<void> {
      await tab.evaluate(axeSource);
      const violations = (await tab.evaluate(async () => {
        const page = globalThis as any;
        const result: { violations: Array<{ id: string; impact: string; nodes: unknown[] }> } = await page.axe.run(page.document);
        return result.violations.map((each) => ({ id: each.id, impact: each.impact, nodes: each.nodes.length }));
      })) as Array<{ id: string; impact: string }>;
      expect(
        violations.filter((each) => each.impact === 'serious' || each.impact === 'critical'),
        `${name}: axe-core`,
      ).to.deep.equal([]);
      mkdirSync(screenshotDir, { recursive: true });
      const file = path.join(screenshotDir, `console-${name}.png`);
      await tab.screenshot({ path: file, fullPage: false });
      if (process.env.TKGATE_UPDATE_SCREENSHOTS === '1') {
        mkdirSync(docsImages, { recursive: true });
        copyFileSync(file, path.join(docsImages, `console-${name}.png`));
      }
    }

    it('serves the page with its security headers, immutable hashed assets and no way out of its files', async () => {
      const index = await fetch(consoleUrl());
      expect(index.status).to.equal(200);
      const csp = index.headers.get('content-security-policy')!;
      expect(csp).to.match(/default-src 'self'/);
      expect(csp).to.match(/frame-ancestors 'none'/);
      expect(csp).not.to.match(/unsafe-inline|unsafe-eval/);
      expect(index.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(index.headers.get('cache-control')).to.equal('no-cache');
      const html = await index.text();
      const assets = [...html.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((match) => match[1]!);
      expect(assets).to.have.length(2);
      for (const asset of assets) {
        const answer = await fetch(`${consoleUrl()}${asset}`);
        expect(answer.status, asset).to.equal(200);
        expect(answer.headers.get('cache-control'), asset).to.equal('public, max-age=31536000, immutable');
        expect(answer.headers.get('x-content-type-options'), asset).to.equal('nosniff');
      }
      const bare = await fetch(`${s.base}/console`, { redirect: 'manual' });
      expect(bare.status).to.equal(301);
      expect(bare.headers.get('location')).to.equal(new URL(consoleUrl()).pathname);
      for (const probe of ['../openapi.json', '..%2f..%2fpackage.json', '%2e%2e/%2e%2e/package.json', 'package.json', 'src/main.ts', '.%2findex.html']) {
        const answer = await call('GET', `${consoleUrl()}${probe}`);
        expect([401, 404], probe).to.include(answer.status);
        expect(JSON.stringify(answer.body), probe).not.to.match(/@tkgate/);
      }
      const settings = await call('GET', `${consoleUrl()}config.json`);
      expect(settings.body).to.deep.equal({ providers: [{ name: 'corp' }] });
      // The console's own page is an allowed return_to on the gateway's origin; the same path elsewhere is not.
      const login = (returnTo: string) => fetch(`${s.base}/auth/oidc/corp/login?return_to=${encodeURIComponent(returnTo)}`, { redirect: 'manual' });
      expect((await login(consoleUrl())).status).to.equal(302);
      const elsewhere = await login(`http://evil.example.test${new URL(consoleUrl()).pathname}`);
      expect(elsewhere.status).to.equal(400);
      expect(((await elsewhere.json()) as any).error.code).to.equal('invalid_return_to');
      expect((await login(`${new URL(s.base).origin}/elsewhere/`)).status).to.equal(400);
    });

    it('signs in with a password, shows who and until when, keeps the token in sessionStorage only, and signs out', async () => {
      const tab = await openConsole();
      await checkPage(tab, 'sign-in');
      await tab.getByLabel('Username').fill('ana');
      await tab.getByLabel('Password').fill('wrong');
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.getByText('Wrong username or password.').waitFor();
      await signIn(tab, 'ana');
      expect(await tab.locator('#who').textContent()).to.equal('ana (power 100)');
      expect(await tab.locator('#expires').getAttribute('datetime')).to.match(/^\d{4}-\d\d-\d\dT/);
      const storage = await tab.evaluate(() => {
        const page = globalThis as any;
        return { session: Object.keys(page.sessionStorage), local: Object.keys(page.localStorage) };
      });
      expect(storage.session).to.deep.equal(['tkgate.token']);
      expect(storage.local).to.deep.equal([]);
      await tab.getByRole('button', { name: 'Sign out' }).click();
      await tab.getByText('Signed out.').waitFor();
      expect(await tab.evaluate(() => (globalThis as any).sessionStorage.length)).to.equal(0);
      await tab.context().close();
    });

    it('returns to the sign-in page on a 401 (the session ended elsewhere)', async () => {
      const tab = await openConsole();
      await signIn(tab, 'bob');
      const token = await tab.evaluate(() => (globalThis as any).sessionStorage.getItem('tkgate.token') as string);
      expect((await call('POST', `${s.base}/auth/logout`, { token: token! })).status).to.equal(200);
      await tab.getByRole('link', { name: 'Runs' }).click();
      await tab.getByText('Your session has ended: sign in again.').waitFor({ timeout: 30_000 });
      await tab.context().close();
    });

    it('Endpoints: lists what the caller may call, searches, shows a 400 at its field and the answer as JSON', async () => {
      const tab = await openConsole();
      await signIn(tab, 'ana');
      await tab.getByRole('heading', { name: 'desk' }).waitFor();
      await checkPage(tab, 'endpoints');
      await tab.getByLabel('Search endpoints').fill('says back');
      await tab.getByText('2 of 12 endpoints').waitFor();
      const form = tab.locator('form[data-operation="tk.app.desk.echo.post"]');
      await form.locator('xpath=..').locator('summary').click();
      expect(await form.locator('input[name="name"]').getAttribute('maxlength')).to.equal('12');
      expect(await form.locator('input[name="name"]').getAttribute('pattern')).to.equal('^[a-z]+$');
      expect(await form.locator('input[name="count"]').getAttribute('type')).to.equal('number');
      expect(await form.locator('select[name="colour"] option').allTextContents()).to.deep.equal(['—', 'red', 'blue']);
      expect(await form.locator('input[name="loud"]').getAttribute('type')).to.equal('checkbox');
      expect(await form.getByText('name (required)').count()).to.equal(1);
      await form.locator('input[name="name"]').fill('NOT-LOWER');
      await form.getByRole('button', { name: 'Call POST' }).click();
      const fieldError = form.locator('[data-field="name"] .field-error');
      await fieldError.filter({ hasText: /pattern/ }).waitFor({ timeout: 20_000 });
      expect(await form.locator('input[name="name"]').getAttribute('aria-invalid')).to.equal('true');
      await checkPage(tab, 'endpoint-400');
      await form.locator('input[name="name"]').fill('ana');
      await form.locator('input[name="count"]').fill('3');
      await form.locator('select[name="colour"]').selectOption('blue');
      await form.locator('input[name="loud"]').check();
      await form.getByRole('button', { name: 'Call POST' }).click();
      const answer = JSON.parse((await form.locator('pre.json').textContent({ timeout: 20_000 }))!);
      expect(answer.success).to.equal(true);
      expect(answer.data.payload ?? answer.data.body ?? answer.data).to.deep.include({ name: 'ana', count: 3, colour: 'blue', loud: true });
      expect(await fieldError.textContent()).to.equal('');

      await tab.getByLabel('Search endpoints').fill('file');
      const download = tab.waitForEvent('download');
      const file = tab.locator('form[data-operation="tk.app.desk.file.get"]');
      await file.locator('xpath=..').locator('summary').click();
      await file.getByRole('button', { name: 'Call GET' }).click();
      expect((await download).suggestedFilename()).to.be.a('string');
      await tab.context().close();
    });

    it('Endpoints: a forwarded REST endpoint takes a query and a JSON body from its form; a WebSocket endpoint says how to reach it', async () => {
      const tab = await openConsole();
      await signIn(tab, 'ana');
      await tab.getByLabel('Search endpoints').fill('rest');
      await tab.getByText('5 of 12 endpoints').waitFor();

      const put = tab.locator('form[data-operation="tk.app.rest.hosts.{name}.put"]');
      await put.locator('xpath=..').locator('summary').click();
      await put.getByLabel('name (required)').fill('web-1');
      await put.getByLabel('JSON body').fill('{"rack": 4, "tags": ["a"]}');
      await put.getByRole('button', { name: 'Call PUT' }).click();
      await put.locator('pre.json').waitFor({ timeout: 20_000 });
      const sent = await eventually('the PUT reached the upstream', () => upstream.requests.find((each) => each.url === '/v1/hosts/web-1'));
      expect(JSON.parse(sent.body)).to.deep.equal({ rack: 4, tags: ['a'] });
      // Not JSON: said at the field, nothing sent.
      await put.getByLabel('JSON body').fill('[1, 2]');
      await put.getByRole('button', { name: 'Call PUT' }).click();
      await put.locator('[data-field="JSON body"] .field-error').filter({ hasText: 'must be a JSON object' }).waitFor();

      const any = tab.locator('form[data-operation="tk.app.rest.*.get"]');
      await any.locator('xpath=..').locator('summary').click();
      await any.getByLabel('* (required)').fill('hosts');
      await any.getByLabel('more query parameters').fill('rack=3&sort=name');
      await any.getByRole('button', { name: 'Call GET' }).click();
      await eventually('the GET reached the upstream with its query', () => upstream.requests.find((each) => each.url === '/v1/hosts?rack=3&sort=name'));

      const socket = tab.locator('div.websocket[data-operation="tk.app.rest.live.get"]');
      const card = socket.locator('xpath=..');
      await card.locator('summary').click();
      expect(await card.locator('summary .badge').textContent()).to.equal('WebSocket');
      expect(await socket.textContent()).to.include(`ws://${new URL(s.base).host}${new URL(s.base).pathname}/tk/app/rest/live`);
      expect(await socket.textContent()).to.include('tkgate.bearer.<token>');
      expect(await card.getByRole('button').count()).to.equal(0);
      await checkPage(tab, 'endpoints-forwarded');
      await tab.context().close();
    });

    it('Endpoints: a triggered endpoint says by which scheme and as whom, never its secret', async () => {
      const tab = await openConsole();
      await signIn(tab, 'ana');
      await tab.getByLabel('Search endpoints').fill('hook');
      await tab.getByText('1 of 12 endpoints').waitFor();
      const form = tab.locator('form[data-operation="tk.app.ops.hook.post"]');
      const card = form.locator('xpath=..');
      expect(await card.locator('summary .badge').textContent()).to.equal('triggered by github as bob');
      await card.locator('summary').click();
      expect(await card.locator('p.trigger').textContent()).to.include('Triggered by github as bob');
      expect(await tab.content()).not.to.include(HOOK_SECRET);
      const token = await tab.evaluate(() => (globalThis as any).sessionStorage.getItem('tkgate.token') as string);
      const described = await call('GET', `${s.base}/openapi.json`, { token });
      expect(described.body.paths['/tk/app/ops/hook'].post['x-trigger']).to.deep.equal({ verify: 'github', as: 'bob' });
      expect(JSON.stringify(described.body)).not.to.include(HOOK_SECRET);
      await tab.context().close();
    });

    it('Runs: an async call opens its run page, lines appear while the command runs, and cancel ends it', async () => {
      const tab = await openConsole();
      await signIn(tab, 'bob');
      await tab.getByLabel('Search endpoints').fill('ops live');
      const form = tab.locator('form[data-operation="tk.app.ops.live.post"]');
      await form.locator('xpath=..').locator('summary').click();
      await form.getByRole('button', { name: 'Call POST' }).click();
      await tab.waitForURL(/#\/runs\/[^/]+$/, { timeout: 20_000 });
      const runId = decodeURIComponent(new URL(tab.url()).hash.slice('#/runs/'.length));
      const output = tab.locator('#output');
      await output.filter({ hasText: 'first line' }).waitFor({ timeout: 30_000 });
      expect(await output.textContent()).not.to.include('second line');
      writeFileSync(path.join(goDir, runId), '');
      await output.filter({ hasText: 'second line' }).waitFor({ timeout: 30_000 });
      await tab.locator('#run-status').filter({ hasText: 'running' }).waitFor({ timeout: 30_000 });
      await checkPage(tab, 'run');
      // Cancel asks first: dismissed, nothing happens; accepted, the run ends and the page says so.
      tab.once('dialog', (dialog) => void dialog.dismiss());
      await tab.getByRole('button', { name: 'Cancel run' }).click();
      expect(await tab.locator('#run-status').textContent()).to.equal('running');
      expect(await tab.getByRole('status').first().textContent()).to.equal('');
      // The click completes once the dialog is answered: it is awaited after.
      const asked = tab.waitForEvent('dialog', { timeout: 10_000 });
      const clicked = tab.getByRole('button', { name: 'Cancel run' }).click();
      const dialog = await asked;
      expect(dialog.message()).to.include(`Cancel run ${runId}`);
      await dialog.accept();
      await clicked;
      await tab.locator('#run-status').filter({ hasText: 'cancelled' }).waitFor({ timeout: 60_000 });
      expect(await tab.getByRole('button', { name: 'Cancel run' }).isHidden()).to.equal(true);
      await tab.getByText('The run ended: cancelled.').waitFor({ timeout: 30_000 });
      expect(await tab.getByText('Cancelling…').count()).to.equal(0);
      // The command was ended by a signal: no exit code, and the signal on its own row.
      const fact = (name: string) => factOf(tab, name);
      expect(await fact('Exit code').textContent()).to.equal('—');
      expect(await fact('Signal').textContent()).to.match(/^SIG[A-Z]+$/);

      await tab.getByRole('link', { name: 'Runs' }).click();
      await tab.getByRole('link', { name: runId.slice(0, 12) }).waitFor();
      await tab.getByLabel('Status').selectOption('succeeded');
      await tab.getByRole('button', { name: 'Filter' }).click();
      await tab.getByText('No runs.').waitFor();
      await tab.getByLabel('Status').selectOption('cancelled');
      await tab.getByRole('button', { name: 'Filter' }).click();
      await tab.getByRole('link', { name: runId.slice(0, 12) }).waitFor();
      await checkPage(tab, 'runs');
      await tab.context().close();
    });

    it('shows run output as text: markup in it runs nothing and is shown literally, colour codes stripped', async () => {
      const tab = await openConsole();
      await signIn(tab, 'bob');
      await tab.getByLabel('Search endpoints').fill('hostile');
      const form = tab.locator('form[data-operation="tk.app.ops.hostile.post"]');
      // By keyboard alone: the endpoint opens with Enter on its summary, the call with Enter on its button.
      await form.locator('xpath=..').locator('summary').focus();
      await tab.keyboard.press('Enter');
      await form.getByRole('button', { name: 'Call POST' }).focus();
      await tab.keyboard.press('Enter');
      await tab.waitForURL(/#\/runs\/[^/]+$/, { timeout: 20_000 });
      await tab.locator('#run-status').filter({ hasText: 'succeeded' }).waitFor({ timeout: 30_000 });
      const output = tab.locator('#output');
      await output.filter({ hasText: 'red' }).waitFor({ timeout: 30_000 });
      const text = await output.textContent();
      expect(text).to.include('<img src=x onerror="window.__pwned=1">');
      expect(text).to.include('<script>window.__pwned=2</script>');
      expect(text).to.include('<b>bold?</b>');
      expect(text).to.include('red\n');
      expect(text).not.to.include('\u001b');
      expect(await output.locator('img, script, b').count()).to.equal(0);
      expect(await tab.evaluate(() => (globalThis as any).__pwned)).to.equal(undefined);
      await tab.context().close();
    });

    it('API keys: creates a key shown once, which works from outside the browser, and revokes it', async () => {
      const tab = await openConsole();
      await signIn(tab, 'bob');
      await tab.getByRole('link', { name: 'API keys' }).click();
      await tab.getByText('No keys yet.').waitFor();
      await tab.getByLabel('Name (required)').fill('nightly');
      await tab.getByLabel('Toolkits').fill('desk');
      await tab.getByLabel('Expires in').fill('1d');
      await tab.getByRole('button', { name: 'Create key' }).click();
      const key = await tab.getByLabel('New key').inputValue({ timeout: 20_000 });
      expect(key).to.match(/^tkg_/);
      await tab.getByRole('cell', { name: 'nightly', exact: true }).waitFor();
      await checkPage(tab, 'keys');
      const used = await fetch(`${s.base}/tk/app/desk/echo?name=key`, { headers: { authorization: `Bearer ${key}` } });
      expect(used.status).to.equal(200);
      const outOfScope = await fetch(`${s.base}/tk/app/ops/live`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
      expect(outOfScope.status).to.equal(403);
      tab.once('dialog', (dialog) => void dialog.accept());
      await tab.getByRole('button', { name: 'Revoke nightly' }).click();
      await tab.getByText(/^revoked /).waitFor({ timeout: 20_000 });
      expect((await fetch(`${s.base}/tk/app/desk/echo?name=key`, { headers: { authorization: `Bearer ${key}` } })).status).to.equal(401);
      await tab.context().close();
    });

    it('Approvals: a run one user asks for, approved by a second user in another browser context, then runs', async () => {
      const bob = await openConsole();
      await signIn(bob, 'bob');
      await bob.getByLabel('Search endpoints').fill('ops deploy');
      const form = bob.locator('form[data-operation="tk.app.ops.deploy.post"]');
      await form.locator('xpath=..').locator('summary').click();
      await form.locator('input[name="service"]').fill('billing');
      await form.getByRole('button', { name: 'Call POST' }).click();
      await bob.waitForURL(/#\/runs\/[^/]+$/, { timeout: 20_000 });
      const runId = decodeURIComponent(new URL(bob.url()).hash.slice('#/runs/'.length));
      await bob.locator('#run-status').filter({ hasText: 'awaiting_approval' }).waitFor({ timeout: 20_000 });
      // Who decides, how many must, and until when.
      const fact = (name: string) => factOf(bob, name);
      expect(await fact('Approvers').textContent()).to.equal('power 50 or more (not the caller)');
      expect(await fact('Quorum').textContent()).to.equal('0 of 1 approval');
      expect(await fact('Approval expires').textContent()).not.to.equal('—');
      await bob.getByRole('link', { name: 'Approvals' }).click();
      await bob.getByText('Nothing awaits your decision.').waitFor({ timeout: 20_000 });
      // A second run, asked for from outside the browser: someone decides it elsewhere while the page shows it.
      const bobToken = (await call('POST', `${s.base}/auth/login`, { body: { username: 'bob', password: passwordOf('bob') } })).body.data.token as string;
      const other = await call('POST', `${s.base}/tk/app/ops/deploy`, { token: bobToken, body: { service: 'search' } });
      expect(other.status, JSON.stringify(other.body)).to.equal(202);
      const otherId = other.body.data.run_id as string;

      const ana = await openConsole();
      await signIn(ana, 'ana');
      await ana.getByRole('link', { name: 'Approvals' }).click();
      const card = ana.locator(`section[data-run="${runId}"]`);
      await card.waitFor({ timeout: 20_000 });
      await card.getByLabel('dry run output').filter({ hasText: 'would deploy: 3 hosts' }).waitFor({ timeout: 30_000 });
      expect(await card.getByLabel('payload').textContent()).to.include('billing');
      expect(await card.locator('dl.facts').textContent()).to.include('0 of 1 approval');
      await checkPage(ana, 'approvals');

      // Decided in another tab meanwhile: the page's Approve meets 409, and neither button stays on.
      const anaToken = (await call('POST', `${s.base}/auth/login`, { body: { username: 'ana', password: passwordOf('ana') } })).body.data.token as string;
      expect((await call('POST', `${s.base}/runs/${otherId}/reject`, { token: anaToken, body: { comment: 'not now' } })).status).to.equal(200);
      const stale = ana.locator(`section[data-run="${otherId}"]`);
      await stale.getByRole('button', { name: 'Approve' }).click();
      await stale.getByText(/run_not_pending/).waitFor({ timeout: 20_000 });
      expect(await stale.getByRole('button', { name: 'Reject' }).isDisabled()).to.equal(true);
      expect(await stale.getByRole('button', { name: 'Approve' }).isDisabled()).to.equal(true);

      await card.getByRole('button', { name: 'Reject' }).click();
      await card.getByText('A rejection needs a comment.').waitFor();
      await card.getByLabel('Comment').fill('looks right');
      // While the approval is on its way, Reject is off already.
      let rejectWhileApproving: boolean | undefined;
      await ana.route('**/runs/*/approve', async (route) => {
        rejectWhileApproving = await card.getByRole('button', { name: 'Reject' }).isDisabled();
        await route.continue();
      });
      await card.getByRole('button', { name: 'Approve' }).click();
      await card.getByText(/^Approved: the run is now (queued|running|succeeded)\.$/).waitFor({ timeout: 20_000 });
      expect(rejectWhileApproving).to.equal(true);
      expect(await card.getByRole('button', { name: 'Reject' }).isDisabled()).to.equal(true);
      await ana.context().close();

      await bob.goto(`${consoleUrl()}#/runs/${encodeURIComponent(runId)}`);
      await bob.locator('#run-status').filter({ hasText: 'succeeded' }).waitFor({ timeout: 60_000 });
      await bob.locator('#output').filter({ hasText: 'deployed' }).waitFor({ timeout: 30_000 });
      await bob.context().close();
    });

    it('Audit: for admins only; filters by user and action, pages', async () => {
      const bob = await openConsole();
      await signIn(bob, 'bob');
      expect(await bob.getByRole('link', { name: 'Audit' }).count()).to.equal(0);
      await bob.context().close();
      const tab = await openConsole();
      await signIn(tab, 'ana');
      await tab.getByRole('link', { name: 'Audit' }).click();
      await tab.getByRole('heading', { name: 'Audit' }).waitFor();
      await tab.locator('caption').filter({ hasText: 'page 1' }).waitFor({ timeout: 20_000 });
      await tab.getByLabel('User').fill('bob');
      await tab.getByLabel('Action').fill('login');
      await tab.getByRole('button', { name: 'Filter' }).click();
      await eventually('only bob’s logins', async () => {
        const users = await tab.locator('tbody tr td:nth-child(2)').allTextContents();
        const actions = await tab.locator('tbody tr td:nth-child(3)').allTextContents();
        return users.length > 0 && users.every((user) => user === 'bob') && actions.every((action) => action === 'login') ? true : undefined;
      });
      await checkPage(tab, 'audit');
      await tab.getByLabel('Since').fill('not a time');
      await tab.getByRole('button', { name: 'Filter' }).click();
      await tab.getByRole('alert').filter({ hasText: 'since' }).waitFor();
      await tab.context().close();
    });

    it("refuses a login_code sent from another browser (login CSRF): the victim's console signs nobody in", async () => {
      s.idp.addAccount({ sub: 'u-3002', claims: { preferred_username: 'mallory', groups: ['staff'] } });
      // The attacker signs in in his own browser and stops before the exchange, keeping the console link's code.
      const attacker = await openConsole();
      let code: string | undefined;
      await attacker.route('**/auth/oidc/exchange', async (route) => {
        code = JSON.parse(route.request().postData()!).login_code;
        await route.abort();
      });
      await signInAtProvider(attacker, 'u-3002');
      await eventually('the attacker has his login_code', () => code);

      // The victim opens the link in a browser of her own (a new tab, a fresh context: her cookies, not his).
      const victim = await (await browser!.newContext()).newPage();
      await victim.goto(`${consoleUrl()}#login_code=${encodeURIComponent(code!)}`);
      await victim.getByText('this sign-in was not started in this browser').waitFor({ timeout: 30_000 });
      expect(await victim.locator('#who').count()).to.equal(0);
      expect(await victim.evaluate(() => (globalThis as any).sessionStorage.length)).to.equal(0);
      await victim.context().close();

      // In the browser that signed in, the same code still works.
      const again = await attacker.context().newPage();
      await again.goto(`${consoleUrl()}#login_code=${encodeURIComponent(code!)}`);
      await again.locator('#who').filter({ hasText: 'mallory (power 10)' }).waitFor({ timeout: 30_000 });
      await attacker.context().close();
    });

    it("signs in through the OIDC provider's pages and back to the console", async () => {
      s.idp.addAccount({ sub: 'u-3001', claims: { preferred_username: 'erin', groups: ['staff'] } });
      const tab = await openConsole();
      await signInAtProvider(tab, 'u-3001');
      await tab.locator('#who').filter({ hasText: 'erin (power 10)' }).waitFor({ timeout: 30_000 });
      expect(new URL(tab.url()).hash).not.to.match(/login_code/);
      await tab.context().close();
    });
  });
}

for (const dialect of sqlite) {
  describe(`the console turned off (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'cora' }], { server: { port: 0 }, console: { enabled: false } });

    it('answers 404 at {base}/console/ and its files', async () => {
      for (const url of [`${s.gateway.base}/console/`, `${s.gateway.base}/console`, `${s.gateway.base}/console/config.json`]) {
        const answer = await call('GET', url);
        expect(answer.status, url).to.equal(404);
        expect(answer.body.error.code, url).to.equal('not_found');
      }
    });
  });
}

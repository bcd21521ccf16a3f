import { rmSync } from 'node:fs';
import path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { sleep } from '../support/fixtures.js';
import { writeConfig } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir, writeToolkit, type ToolkitDoc } from '../support/toolkit-files.js';

/** GET {base}/openapi.json and `tkgate openapi`: the description follows the files, the caller's power and reloads. */
const shop = (extra: Array<Record<string, unknown>> = [], description = 'Things to buy.'): ToolkitDoc => ({
  name: 'shop',
  type: 'app',
  description,
  endpoints: [
    echoEndpoint({
      path: 'items/search',
      method: 'GET',
      description: 'Finds items.',
      client_filter: {
        allowed_fields: ['q', 'limit', 'status'],
        required_fields: ['q'],
        field_rules: {
          q: { type: 'string', max_length: 64, pattern: '^[a-z ]+$' },
          limit: { type: 'integer' },
          status: { type: 'string', allowed_values: ['open', 'closed'] },
        },
      },
    }),
    echoEndpoint({
      path: 'items/add',
      method: 'POST',
      permissions: { min_power: 10 },
      inject_db_context: ['users.username as who'],
      client_filter: {
        required_fields: ['title'],
        max_body_bytes: 2048,
        allowed_content_types: ['application/json'],
        field_rules: { title: { type: 'string', max_length: 120 }, tags: { type: 'array', max_length: 5 } },
      },
    }),
    echoEndpoint({ path: 'admin/purge', method: 'POST', permissions: { min_power: 50 } }),
    { path: 'files/export', method: 'GET', type: 'http', upstream: { url: 'http://127.0.0.1:9/export.csv', passthrough: true } },
    { path: 'report', method: 'GET', type: 'exec', command: ['/bin/true'] },
    { path: 'me', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'users', columns: ['id', 'username'], where: { id: '$context.user_id' } }] },
    ...extra,
  ],
});

const attic: ToolkitDoc = { name: 'attic', type: 'lib', enabled: false, endpoints: [echoEndpoint()] };
const tools: ToolkitDoc = { name: 'tools', type: 'lib', endpoints: [echoEndpoint({ description: 'A lib endpoint.' })] };

/** Validates with a maintained OpenAPI 3.1 validator (on a copy: it dereferences in place). */
async function expectValidOpenApi(document: unknown): Promise<void> {
  const result = await validate(structuredClone(document) as Parameters<typeof validate>[0]);
  expect(result.valid, JSON.stringify(result)).to.equal(true);
}

const operationIds = (document: any): string[] =>
  Object.values(document.paths as Record<string, Record<string, { operationId: string }>>)
    .flatMap((item) => Object.values(item).map((op) => op.operationId))
    .sort();

for (const dialect of dialects) {
  describe(`OpenAPI description (${dialect.name})`, () => {
    const dir = toolkitDir({ 'shop.yaml': shop(), 'attic.yaml': attic, 'tools.json': tools });
    const s = withGateway(
      dialect,
      [
        { username: 'lou', power: 0 },
        { username: 'mia', power: 20 },
        { username: 'ada', power: 100 },
      ],
      {},
      { toolkitsDir: dir },
    );
    const openapi = async (username: string) => {
      const reply = await call('GET', `${s.gateway.base}/openapi.json`, { token: await s.login(username) });
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('content-type')).to.match(/^application\/json/);
      return reply.body;
    };

    it('needs a session, and is a valid OpenAPI 3.1 document', async () => {
      const anonymous = await call('GET', `${s.gateway.base}/openapi.json`);
      expect(anonymous.status).to.equal(401);
      expect(anonymous.body.error.code).to.equal('unauthorized');
      const document = await openapi('ada');
      expect(document.openapi).to.equal('3.1.0');
      expect(document.servers).to.deep.equal([{ url: '/api' }]);
      expect(document.components.securitySchemes.bearerAuth).to.include({ type: 'http', scheme: 'bearer' });
      expect(document.security).to.deep.equal([{ bearerAuth: [] }]);
      expect(document.paths['/auth/login'].post.security).to.deep.equal([]);
      await expectValidOpenApi(document);
    });

    it("lists only the endpoints the caller's power reaches, never a disabled toolkit's", async () => {
      const auth = ['auth.apiKeys.create', 'auth.apiKeys.list', 'auth.apiKeys.revoke', 'auth.login', 'auth.logout', 'auth.status', 'openapi', 'toolkitSchema'];
      const open = [
        'tk.app.shop.files.export.get',
        'tk.app.shop.items.search.get',
        'tk.app.shop.me.get',
        'tk.app.shop.report.get',
        'tk.lib.tools.echo.get',
        'tk.lib.tools.echo.post',
      ];
      expect(operationIds(await openapi('lou'))).to.deep.equal([...auth, ...open].sort());
      expect(operationIds(await openapi('mia'))).to.deep.equal([...auth, ...open, 'tk.app.shop.items.add.post'].sort());
      expect(operationIds(await openapi('ada'))).to.deep.equal(
        [...auth, ...open, 'tk.app.shop.items.add.post', 'tk.app.shop.admin.purge.post', 'auth.clearSessions', 'admin.audit'].sort(),
      );
      expect((await openapi('lou')).tags.map((tag: { name: string }) => tag.name)).to.deep.equal(['auth', 'shop', 'tools']);
    });

    it('derives request schemas from client_filter and lists the envelope and the pipeline errors', async () => {
      const document = await openapi('ada');
      const search = document.paths['/tk/app/shop/items/search'].get;
      expect(search.description).to.match(/^Finds items\./);
      expect(search.parameters).to.deep.equal([
        { name: 'q', in: 'query', required: true, schema: { type: 'string', maxLength: 64, pattern: '^[a-z ]+$' } },
        { name: 'limit', in: 'query', required: false, schema: { type: 'integer' } },
        { name: 'status', in: 'query', required: false, schema: { type: 'string', enum: ['open', 'closed'] } },
      ]);
      expect(Object.keys(search.responses)).to.deep.equal(['200', '400', '401', '404', '500']);
      expect(search.responses['404'].content['application/json'].schema.allOf[1].properties.error.properties.code).to.deep.equal({
        enum: ['toolkit_not_found', 'endpoint_not_found'],
      });

      const add = document.paths['/tk/app/shop/items/add'].post;
      expect(add['x-min-power']).to.equal(10);
      expect(add.requestBody['x-max-body-bytes']).to.equal(2048);
      expect(Object.keys(add.requestBody.content)).to.deep.equal(['application/json']);
      const body = add.requestBody.content['application/json'].schema;
      expect(body.required).to.deep.equal(['title']);
      expect(body.properties).to.deep.equal({ title: { type: 'string', maxLength: 120 }, tags: { type: 'array', maxItems: 5 } });
      expect(Object.keys(add.responses)).to.deep.equal(['200', '400', '401', '403', '404', '413', '500']);
      expect(add.responses['500'].content['application/json'].schema.allOf[1].properties.error.properties.code.enum).to.deep.equal([
        'internal_error',
        'db_context_failed',
      ]);
      expect(document.paths['/tk/app/shop/admin/purge'].post.requestBody['x-max-body-bytes'], 'server.max_body_bytes').to.equal(1_048_576);

      const tag = document.tags.find((entry: { name: string }) => entry.name === 'shop');
      expect(tag.description).to.equal('Things to buy.');
    });

    it('lets each endpoint type describe its answers: passthrough bytes, the exec and http errors, internal rows', async () => {
      const document = await openapi('ada');
      const file = document.paths['/tk/app/shop/files/export'].get.responses;
      expect(Object.keys(file['200'].content)).to.deep.equal(['*/*']);
      expect(file['200'].description).to.match(/upstream's bytes/);
      expect(file['502'].content['application/json'].schema.allOf[1].properties.error.properties.code).to.deep.equal({ const: 'upstream_error' });
      const report = document.paths['/tk/app/shop/report'].get.responses;
      expect(report['500'].content['application/json'].schema.allOf[1].properties.error.properties.code.enum).to.include('exec_failed');
      expect(report['503'].content['application/json'].schema.allOf[1].properties.error.properties.code).to.deep.equal({ const: 'busy' });
      expect(document.paths['/tk/app/shop/items/search'].get.responses['200'].content['application/json'].schema, 'a handler: any data').to.deep.equal({
        $ref: '#/components/schemas/SuccessEnvelope',
      });
      const me = document.paths['/tk/app/shop/me'].get.responses['200'].content['application/json'].schema.allOf[1].properties.data;
      expect(me).to.deep.include({ type: 'array', items: { type: 'object', properties: { id: {}, username: {} } } });
    });

    it('follows hot reloads: an added endpoint, a changed description and a removed toolkit', async () => {
      const token = await s.login('lou');
      writeToolkit(dir, 'shop.yaml', shop([echoEndpoint({ path: 'items/new', method: 'GET' })], 'Things to buy, and new ones.'));
      rmSync(path.join(dir, 'tools.json'));
      const deadline = Date.now() + 10_000;
      let document;
      for (;;) {
        document = (await call('GET', `${s.gateway.base}/openapi.json`, { token })).body;
        if (document.paths['/tk/app/shop/items/new'] && !document.paths['/tk/lib/tools/echo']) break;
        if (Date.now() > deadline) expect.fail(`the description did not follow the reload: ${Object.keys(document.paths).join(', ')}`);
        await sleep(100);
      }
      expect(document.tags.find((tag: { name: string }) => tag.name === 'shop').description).to.equal('Things to buy, and new ones.');
      await expectValidOpenApi(document);
    });

    it('tkgate openapi prints the whole document from the files; --toolkit one toolkit', async () => {
      const files = toolkitDir({ 'shop.yaml': shop(), 'attic.yaml': attic, 'tools.json': tools });
      const config = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions, toolkits: { dir: files } });
      const [whole, one, unknown] = await Promise.all([
        runCli(['openapi', '--config', config]),
        runCli(['openapi', '--toolkit', 'tools', '--config', config]),
        runCli(['openapi', '--toolkit', 'attic', '--config', config]),
      ]);
      expect(whole.code, whole.stderr).to.equal(0);
      const document = JSON.parse(whole.stdout);
      await expectValidOpenApi(document);
      expect(operationIds(document)).to.include.members(['tk.app.shop.admin.purge.post', 'auth.clearSessions', 'admin.audit', 'tk.lib.tools.echo.get']);
      expect(Object.keys(document.paths).some((route) => route.includes('attic'))).to.equal(false);

      expect(one.code, one.stderr).to.equal(0);
      expect(Object.keys(JSON.parse(one.stdout).paths).filter((route) => route.startsWith('/tk/'))).to.deep.equal(['/tk/lib/tools/echo']);

      expect(unknown.code).to.equal(1);
      expect(unknown.stderr.trim()).to.match(/^tkgate openapi: no enabled toolkit named attic in /);
    });
  });
}

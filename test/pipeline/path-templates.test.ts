import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { call, toolkitClient } from '../support/http.js';
import { rawRequest } from '../support/raw-http.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { createToolkitTables } from '../support/tables.js';
import { pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';

/**
 * Path templates: `{name}` segments and a trailing `*`, exact before template before wildcard, the values as
 * `path_params` and `$path.<name>`, path_rules, OpenAPI path parameters, and ambiguous paths refused.
 */
const echo = (path: string, method: string | string[] = 'GET', extra: Record<string, unknown> = {}) => ({
  path,
  method,
  type: 'internal',
  handler: 'echo',
  ...extra,
});
const hosts = {
  name: 'hosts',
  type: 'app',
  endpoints: [
    echo('hosts/all/restart'),
    echo('hosts/{host}/restart', ['GET', 'POST']),
    echo('hosts/{host}/logs/{day}', 'GET', { client_filter: { path_rules: { day: { type: 'integer' } } } }),
    echo('hosts/{host}', 'GET', { client_filter: { path_rules: { host: { pattern: '^web-[0-9]+$' } } } }),
    echo('files/*'),
    echo('files/special/{name}'),
    {
      path: 'items/{title}',
      method: 'GET',
      type: 'internal',
      pseudo_querys: [{ select: 'items', columns: ['title', 'status'], where: { title: '$path.title' } }],
    },
    echo('orders/{status}', 'GET', { inject_db_context: ['orders.total?status=$path.status'] }),
    // A valid parameter name that an object's prototype setter would swallow.
    echo('protos/{__proto__}'),
  ],
};

for (const dialect of dialects) {
  describe(`path templates (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'sara' }], {}, { toolkitsDir: toolkitDir({ 'hosts.yaml': hosts }), prepare: createToolkitTables });
    let client: ReturnType<typeof toolkitClient>;
    let token: string;
    /** A request as sent, never normalised by a client (fetch resolves `..` itself). */
    const raw = async (target: string) =>
      rawRequest(
        s.gateway.port,
        `GET ${new URL(s.gateway.base).pathname}/tk/app/hosts/${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      );
    before(async () => {
      token = await s.login('sara');
      client = toolkitClient(s.gateway.base, token);
    });

    it('an exact path beats a template, a template beats a wildcard; the values are path_params', async () => {
      const exact = await client.get('hosts', 'hosts/all/restart');
      expect(exact.status).to.equal(200);
      expect(exact.body.data).to.not.have.property('path_params');
      const template = await client.get('hosts', 'hosts/web-1/restart');
      expect(template.status).to.equal(200);
      expect(template.body.data.path_params).to.deep.equal({ host: 'web-1' });
      const posted = await client.post('hosts', 'hosts/web-2/restart', {});
      expect(posted.body.data.path_params).to.deep.equal({ host: 'web-2' });
      const special = await client.get('hosts', 'files/special/a.txt');
      expect(special.body.data.path_params).to.deep.equal({ name: 'a.txt' });
      const rest = await client.get('hosts', 'files/special/a/b%20c.txt');
      expect(rest.body.data.path_params).to.deep.equal({ '*': 'special/a/b c.txt' });
      const empty = await client.get('hosts', 'files');
      expect(empty.body.data.path_params).to.deep.equal({ '*': '' });
      const proto = await client.get('hosts', 'protos/x');
      expect(proto.status).to.equal(200);
      expect(Object.keys(proto.body.data.path_params)).to.deep.equal(['__proto__']);
      expect(Object.getOwnPropertyDescriptor(proto.body.data.path_params, '__proto__')?.value).to.equal('x');
    });

    it('percent-encoded values are decoded; a value outside one segment of [A-Za-z0-9._~-] is 400 naming path.<name>', async () => {
      const decoded = await client.get('hosts', 'hosts/web%2D3/restart');
      expect(decoded.body.data.path_params).to.deep.equal({ host: 'web-3' });
      const slash = await client.get('hosts', 'hosts/web%2F3/restart');
      expect(slash.status).to.equal(400);
      expect(slash.body.error.code).to.equal('invalid_payload');
      expect(slash.body.error.details).to.deep.include({
        field: 'path.host',
        rule: 'segment',
        message: 'path.host must be one segment of A-Z a-z 0-9 . _ ~ -, and not . or ..',
      });
      const broken = await client.get('hosts', 'hosts/web%zz/restart');
      expect(broken.status).to.equal(400);
      expect(broken.body.error.details[0].field).to.equal('path.host');
    });

    it('path_rules are checked (and convert) before the payload; a failure is 400 naming path.<name>', async () => {
      const day = await client.get('hosts', 'hosts/web-1/logs/17');
      expect(day.body.data.path_params).to.deep.equal({ host: 'web-1', day: 17 });
      const notDay = await client.get('hosts', 'hosts/web-1/logs/monday');
      expect(notDay.status).to.equal(400);
      expect(notDay.body.error.details).to.deep.equal([{ field: 'path.day', rule: 'type', message: 'path.day must be an integer' }]);
      const pattern = await client.get('hosts', 'hosts/db-1');
      expect(pattern.status).to.equal(400);
      expect(pattern.body.error.details[0]).to.include({ field: 'path.host', rule: 'pattern' });
    });

    it('no path, or no method, of any kind: 404 and 405 as for exact paths', async () => {
      expect((await client.get('hosts', 'hosts/web-1/stop')).body.error.code).to.equal('endpoint_not_found');
      const wrongMethod = await client.post('hosts', 'hosts/web-1', {});
      expect(wrongMethod.status).to.equal(405);
      expect(wrongMethod.headers.get('allow')).to.equal('GET');
      // A template's own text sent literally is not an exact path.
      const literal = await raw('hosts/{host}');
      expect(literal.status, literal.body).to.equal(400);
    });

    it('a wildcard rest with . or .. segments, plain or percent-encoded, is 400 (it never climbs)', async () => {
      for (const rest of ['a/../../secret', '%2e%2e/secret', 'a/%2E%2e%2Fb', '.%2e', 'a/./b', 'a%2F..%2Fb']) {
        const answer = await raw(`files/${rest}`);
        expect(answer.status, rest).to.equal(400);
        expect(answer.body, rest).to.include('"field":"path.*"');
      }
    });

    it('$path.<name> is a bound value in pseudo queries and inject_db_context filters', async () => {
      const sara = (await s.bed.db('users').where({ username: 'sara' }).first('id')) as { id: number };
      await s.bed.db('items').insert({ owner_id: sara.id, title: 'lamp', status: 'open' });
      await s.bed.db('orders').insert([
        { user_id: sara.id, total: 5, status: 'paid' },
        { user_id: sara.id, total: 7, status: 'paid' },
        { user_id: sara.id, total: 9, status: 'open' },
      ]);
      const item = await client.get('hosts', 'items/lamp');
      expect(item.body.data, JSON.stringify(item.body)).to.deep.equal([{ title: 'lamp', status: 'open' }]);
      expect((await client.get('hosts', 'items/chair')).body.data).to.deep.equal([]);
      const orders = await client.get('hosts', 'orders/paid');
      expect(orders.body.data.db_context.total).to.have.members([5, 7]);
    });

    it('OpenAPI shows the parameters as path parameters, the wildcard as {*}', async () => {
      const doc = (await call('GET', `${s.gateway.base}/openapi.json`, { token })).body;
      const logs = doc.paths['/tk/app/hosts/hosts/{host}/logs/{day}'].get;
      expect(logs.parameters.filter((p: { in: string }) => p.in === 'path').map((p: { name: string }) => p.name)).to.deep.equal(['host', 'day']);
      expect(logs.parameters.find((p: { name: string }) => p.name === 'day').schema.type).to.equal('integer');
      expect(doc.paths['/tk/app/hosts/files/{*}'].get.parameters[0]).to.include({ name: '*', in: 'path', required: true });
    });
  });
}

describe('path templates: config check', () => {
  const s = withDatabase(dialects[0]!, []);
  let config: string;
  before(async () => {
    await createToolkitTables(s.bed.db);
    config = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions });
  });

  it('refuses two endpoints that could take the same path with one method, a repeated parameter, and unknown $path names, at file:line:column', async () => {
    const dir = toolkitDir({
      'clash.yaml': [
        'name: clash',
        'type: app',
        'endpoints:',
        '  - { path: "hosts/{host}/restart", method: GET, type: internal, handler: echo }',
        '  - { path: "hosts/{name}/restart", method: [GET, POST], type: internal, handler: echo }',
        '  - { path: "{kind}/web-1/restart", method: POST, type: internal, handler: echo }',
        '  - { path: "hosts/{name}/stop", method: GET, type: internal, handler: echo }',
        '  - { path: "files/*", method: GET, type: internal, handler: echo }',
        '  - { path: "files/a/*", method: GET, type: internal, handler: echo }',
        '  - { path: "files/{name}", method: GET, type: internal, handler: echo }',
        '  - { path: "pair/{a}/{a}", method: GET, type: internal, handler: echo }',
        '  - path: "items/{id}"',
        '    method: GET',
        '    type: internal',
        '    client_filter: { path_rules: { ids: { type: integer } } }',
        '    pseudo_querys: [{ select: items, columns: [id], where: { id: $path.idd } }]',
        '',
      ].join('\n'),
    });
    const result = await runCli(['config', 'check', dir, '--config', config]);
    expect(result.code, result.stderr).to.equal(1);
    const lines = result.stdout
      .trim()
      .split('\n')
      .sort((a, b) => Number(a.split(':')[1]) - Number(b.split(':')[1]));
    expect(lines).to.deep.equal([
      'clash.yaml:5:13: endpoints.1.path (GET,POST hosts/{name}/restart): GET hosts/{name}/restart could take the same paths as hosts/{host}/restart; make one of them an exact path, or give them a literal segment that tells them apart',
      'clash.yaml:6:13: endpoints.2.path (POST {kind}/web-1/restart): POST {kind}/web-1/restart could take the same paths as hosts/{name}/restart; make one of them an exact path, or give them a literal segment that tells them apart',
      'clash.yaml:9:13: endpoints.5.path (GET files/a/*): GET files/a/* could take the same paths as files/*; make one of them an exact path, or give them a literal segment that tells them apart',
      'clash.yaml:11:13: endpoints.7.path (GET pair/{a}/{a}): names the path parameter a twice',
      'clash.yaml:15:41: endpoints.8.client_filter.path_rules.ids (GET items/{id}): the path items/{id} has no parameter ids',
      "clash.yaml:16:66: endpoints.8.pseudo_querys.0.where.id (GET items/{id}): the endpoint's path has no parameter idd",
    ]);
  });
});

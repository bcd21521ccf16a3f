import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { withDatabase } from '../support/suite.js';
import { createToolkitTables } from '../support/tables.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * OpenAPI says what a client must send and what it may get. A payload field that a pseudo query's
 * `$payload.<field>` or an inject_db_context filter needs is required (without it the endpoint answers 400),
 * although client_filter.required_fields does not list it; a plugin's declared error codes are listed
 * without being repeated in its describeResponse.
 */
const probePlugin = path.join(path.dirname(fileURLToPath(import.meta.url)), '../plugins/fixtures/probe-plugin.js');
const orders = {
  name: 'orders',
  type: 'app',
  endpoints: [
    {
      path: 'find',
      method: 'GET',
      type: 'internal',
      client_filter: { allowed_fields: ['title', 'status', 'note'] },
      inject_db_context: ['orders.total?status=$payload.status'],
      pseudo_querys: [{ select: 'items', columns: ['id'], where: { title: '$payload.title' } }],
    },
    {
      path: 'add',
      method: 'POST',
      type: 'internal',
      client_filter: { required_fields: ['owner'] },
      pseudo_querys: [{ insert: 'items', values: { owner_id: '$payload.owner', title: '$payload.title' } }],
    },
    { path: 'probe', method: 'GET', type: 'probe', action: 'conflict' },
    {
      path: 'search',
      method: ['GET', 'POST'],
      type: 'internal',
      pseudo_querys: [
        {
          select: 'items',
          columns: ['id', 'title'],
          where: { owner_id: { '=': '$payload.owner' }, title: { like: { prefix: '$payload.q' }, optional: true }, id: { in: '$payload.ids', optional: true } },
          order_by: { from: '$payload.sort', allowed: ['id', 'title'] },
          limit: { from: '$payload.limit', max: 50 },
          offset: { from: '$payload.offset' },
          count: true,
        },
      ],
    },
  ],
};

for (const dialect of dialects) {
  describe(`OpenAPI: fields the endpoint needs are required, declared error codes are listed (${dialect.name})`, () => {
    const s = withDatabase(dialect, []);
    let document: any;
    before(async () => {
      await createToolkitTables(s.bed.db);
      const config = writeConfig({
        db: s.bed.dbConfig,
        plugins: ['@tkgate/plugin-internal', probePlugin],
        toolkits: { dir: toolkitDir({ 'orders.yaml': orders }) },
      });
      const result = await runCli(['openapi', '--config', config]);
      expect(result.code, result.stderr).to.equal(0);
      document = JSON.parse(result.stdout);
    });

    it('GET: a field of a pseudo query where and of an inject_db_context filter is a required query parameter', () => {
      const parameters = document.paths['/tk/app/orders/find'].get.parameters.map((p: { name: string; required: boolean }) => [p.name, p.required]);
      expect(parameters).to.deep.equal([
        ['title', true],
        ['status', true],
        ['note', false],
      ]);
    });

    it('POST: required_fields and the fields of the values of an insert are required in the body', () => {
      const body = document.paths['/tk/app/orders/add'].post.requestBody;
      expect(body.required).to.equal(true);
      expect(body.content['application/json'].schema.required).to.deep.equal(['owner', 'title']);
      expect(Object.keys(body.content['application/json'].schema.properties)).to.deep.equal(['owner', 'title']);
    });

    it('optional filters, limit, offset and order are listed but not required; a count makes data { rows, count }', () => {
      const parameters = document.paths['/tk/app/orders/search'].get.parameters.map((p: { name: string; required: boolean }) => [p.name, p.required]);
      expect(parameters).to.deep.equal([
        ['owner', true],
        ['q', false],
        ['ids', false],
        ['limit', false],
        ['offset', false],
        ['sort', false],
      ]);
      const body = document.paths['/tk/app/orders/search'].post.requestBody.content['application/json'].schema;
      expect(body.required).to.deep.equal(['owner']);
      expect(Object.keys(body.properties)).to.deep.equal(['owner', 'q', 'ids', 'limit', 'offset', 'sort']);
      const data = document.paths['/tk/app/orders/search'].get.responses['200'].content['application/json'].schema;
      expect(JSON.stringify(data)).to.include('"count":{"type":"integer"');
    });

    it("lists the plugin's declared error codes for its endpoints", () => {
      const responses = document.paths['/tk/app/orders/probe'].get.responses;
      expect(responses['409'].description).to.equal('probe_conflict: The probe found a conflict.');
      expect(responses['409'].content['application/json'].schema.allOf[1]).to.deep.equal({
        properties: { error: { properties: { code: { const: 'probe_conflict' } } } },
      });
      expect(document.paths['/tk/app/orders/find'].get.responses['409'], "not on another plugin's endpoints").to.equal(undefined);
    });
  });
}

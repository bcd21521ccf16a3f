import { expect } from 'chai';
import type { Database } from '@tkgate/core';
import { dialects } from '../support/databases.js';
import { toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * Operators, optional filters, search, paging, order choices and counts of internal endpoints, through
 * HTTP, with the same answers on every database: text compared and searched byte for byte (case
 * included), NULL the smallest value in an order and never equal to or different from anything.
 */
const INJECTION = "x'; DROP TABLE hosts; --";
// prettier-ignore
const HOSTS: Array<[id: number, name: string, power: number | null, status: string | null]> = [
  [1, 'web-1', 10, 'open'],
  [2, 'web-2', 20, 'closed'],
  [3, 'Web-3', 30, null],
  [4, 'db-1', null, 'open'],
  [5, 'a%b', 5, 'open'],
  [6, 'a_b', 6, 'open'],
  [7, 'axb', 7, 'closed'],
  [8, INJECTION, 1, 'open'],
];

async function createHosts(db: Database): Promise<void> {
  await db.schema.createTable('hosts', (table) => {
    table.integer('id').primary();
    table.string('name', 100).notNullable();
    table.integer('power').nullable();
    table.string('status', 20).nullable();
  });
  await db('hosts').insert(HOSTS.map(([id, name, power, status]) => ({ id, name, power, status })));
}

const ids = (where: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'internal',
  pseudo_querys: [{ select: 'hosts', columns: ['id'], where, order_by: 'id', ...extra }],
});
const get = (path: string, where: Record<string, unknown>, extra?: Record<string, unknown>) => ({ path, method: 'GET', ...ids(where, extra) });
const post = (path: string, where: Record<string, unknown>, extra?: Record<string, unknown>) => ({ path, method: 'POST', ...ids(where, extra) });

const OPERATORS = ['>=', '>', '<', '<=', '!=', '='] as const;
const hosts = {
  name: 'hosts',
  type: 'app',
  endpoints: [
    ...OPERATORS.map((op, index) => post(`power/${index}`, { power: { [op]: '$payload.v' } })),
    ...OPERATORS.map((op, index) => post(`status/${index}`, { status: { [op]: '$payload.v' } })),
    post('name-below', { name: { '<': '$payload.v' } }),
    post('by-ids', { id: { in: '$payload.ids' } }),
    post('by-names', { name: { in: '$payload.names' } }),
    get('live', { status: { in: ['open', 'closed'] } }),
    get('prefix', { name: { like: { prefix: '$payload.q' } } }),
    get('contains', { name: { like: { contains: '$payload.q' } } }),
    get('no-power', { power: { is_null: true } }),
    get('some-power', { power: { is_null: false } }),
    get('at-least', { power: { '>=': '$payload.min_power' } }),
    {
      path: 'search',
      method: 'GET',
      type: 'internal',
      pseudo_querys: [
        {
          select: 'hosts',
          columns: ['id', 'name'],
          where: {
            name: { like: { prefix: '$payload.q' }, optional: true },
            power: { '>=': '$payload.min_power', optional: true },
            status: { '=': '$payload.status', optional: true },
          },
          order_by: { from: '$payload.sort', allowed: ['id', 'name', 'power'], default: 'id' },
          limit: { from: '$payload.limit', max: 5, default: 3 },
          offset: { from: '$payload.offset', default: 0 },
          count: true,
        },
      ],
    },
    {
      path: 'close',
      method: 'POST',
      type: 'internal',
      pseudo_querys: [
        { update: 'hosts', set: { status: 'closed' }, where: { id: { in: '$payload.ids' }, status: { '=': '$payload.status', optional: true } } },
      ],
    },
  ],
};

for (const dialect of dialects) {
  describe(`internal endpoints: operators, optional filters, search, paging and counts (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'sara' }], {}, { toolkitsDir: toolkitDir({ 'hosts.yaml': hosts }), prepare: createHosts });
    let client: ReturnType<typeof toolkitClient>;
    before(async () => {
      client = toolkitClient(s.gateway.base, await s.login('sara'));
    });
    const idsOf = (reply: { status: number; body: any }) => {
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return (reply.body.data.rows ?? reply.body.data).map((row: { id: number }) => row.id);
    };
    const refused = (reply: { status: number; body: any }, field: string, rule: string) => {
      expect(reply.status, JSON.stringify(reply.body)).to.equal(400);
      expect(reply.body.error.code).to.equal('invalid_payload');
      const named = reply.body.error.details.map((problem: { field: string; rule: string }) => `${problem.field}/${problem.rule}`);
      expect(named).to.include(`${field}/${rule}`);
    };

    it('compares numbers with each operator; a NULL column meets none of them', async () => {
      // prettier-ignore
      const table: Array<[op: (typeof OPERATORS)[number], value: number, expected: number[]]> = [
        ['>=', 10, [1, 2, 3]], ['>', 10, [2, 3]], ['<', 6, [5, 8]], ['<=', 6, [5, 6, 8]], ['!=', 10, [2, 3, 5, 6, 7, 8]], ['=', 20, [2]],
      ];
      for (const [op, v, expected] of table) expect(idsOf(await client.post('hosts', `power/${OPERATORS.indexOf(op)}`, { v })), op).to.deep.equal(expected);
    });

    it('compares text byte for byte with each operator (case counts), and null means IS NULL / IS NOT NULL for = and !=', async () => {
      // prettier-ignore
      const table: Array<[op: (typeof OPERATORS)[number], value: string | null, expected: number[]]> = [
        ['=', 'OPEN', []], ['=', 'open', [1, 4, 5, 6, 8]], ['!=', 'OPEN', [1, 2, 4, 5, 6, 7, 8]], ['!=', 'open', [2, 7]],
        ['>', 'closed', [1, 4, 5, 6, 8]], ['<', 'open', [2, 7]], ['>=', 'open', [1, 4, 5, 6, 8]], ['<=', 'closed', [2, 7]],
        ['=', null, [3]], ['!=', null, [1, 2, 4, 5, 6, 7, 8]], ['>', null, []],
      ];
      for (const [op, v, expected] of table) {
        expect(idsOf(await client.post('hosts', `status/${OPERATORS.indexOf(op)}`, { v })), `${op} ${v}`).to.deep.equal(expected);
      }
      // Upper case sorts before lower case on every database.
      expect(idsOf(await client.post('hosts', 'name-below', { v: 'a' }))).to.deep.equal([3]);
    });

    it('is_null: true and false', async () => {
      expect(idsOf(await client.get('hosts', 'no-power'))).to.deep.equal([4]);
      expect(idsOf(await client.get('hosts', 'some-power'))).to.deep.equal([1, 2, 3, 5, 6, 7, 8]);
    });

    it('in: a payload list (exact on text), a literal list; no items match nothing; 1001 items are refused naming the field', async () => {
      expect(idsOf(await client.post('hosts', 'by-ids', { ids: [2, 4, 99] }))).to.deep.equal([2, 4]);
      expect(idsOf(await client.post('hosts', 'by-names', { names: ['WEB-1', 'web-2', INJECTION] }))).to.deep.equal([2, 8]);
      expect(idsOf(await client.get('hosts', 'live'))).to.deep.equal([1, 2, 4, 5, 6, 7, 8]);
      expect(idsOf(await client.post('hosts', 'by-ids', { ids: [] }))).to.deep.equal([]);
      expect(idsOf(await client.post('hosts', 'by-ids', { ids: Array.from({ length: 1000 }, (_, i) => i + 1) }))).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
      refused(await client.post('hosts', 'by-ids', { ids: Array.from({ length: 1001 }, (_, i) => i + 1) }), 'ids', 'max_length');
      refused(await client.post('hosts', 'by-ids', { ids: [1, 'two'] }), 'ids', 'type');
      refused(await client.post('hosts', 'by-ids', {}), 'ids', 'required');
    });

    it('like: prefix and contains are case-sensitive and match % _ * [ and quotes only as themselves', async () => {
      // prettier-ignore
      const table: Array<[path: string, q: string, expected: number[]]> = [
        ['prefix', 'web-', [1, 2]], ['prefix', 'Web', [3]], ['prefix', 'WEB', []], ['contains', 'EB', []], ['contains', 'eb-', [1, 2, 3]],
        ['contains', '%', [5]], ['contains', '_', [6]], ['prefix', 'a_', [6]], ['prefix', 'a%', [5]], ['contains', 'a', [5, 6, 7]],
        ['contains', '*', []], ['contains', '[', []], ['contains', '?', []], ['contains', '!', []], ['contains', "'", [8]],
        ['contains', INJECTION, [8]], ['contains', "' OR '1'='1", []], ['prefix', '', [1, 2, 3, 4, 5, 6, 7, 8]],
      ];
      for (const [path, q, expected] of table) expect(idsOf(await client.get('hosts', path, { q })), `${path} ${q}`).to.deep.equal(expected);
      expect(Number((await s.bed.db('hosts').count({ n: '*' }).first())!.n)).to.equal(8);
    });

    it('a required filter that is absent is 400 naming its field; optional ones are left out', async () => {
      refused(await client.get('hosts', 'at-least'), 'min_power', 'required');
      refused(await client.get('hosts', 'at-least', { min_power: 'ten' }), 'min_power', 'type');
      const all = await client.get('hosts', 'search');
      expect(all.body.data).to.deep.equal({ rows: [1, 2, 3].map((id) => ({ id, name: HOSTS[id - 1]![1] })), count: 8 });
      // prettier-ignore
      const table: Array<[query: Record<string, string>, expected: number[], count: number]> = [
        [{ q: 'web-' }, [1, 2], 2], [{ min_power: '6' }, [1, 2, 3], 5], [{ q: 'web-', min_power: '15' }, [2], 1],
        [{ status: 'open' }, [1, 4, 5], 5], [{ status: 'open', min_power: '6', q: 'w' }, [1], 1], [{ q: INJECTION }, [8], 1],
      ];
      for (const [query, expected, count] of table) {
        const reply = await client.get('hosts', 'search', query);
        expect(idsOf(reply), JSON.stringify(query)).to.deep.equal(expected);
        expect(reply.body.data.count, JSON.stringify(query)).to.equal(count);
      }
    });

    it('pages: limit 0, the max, beyond the rows; a limit over max, negative or not whole is 400', async () => {
      // prettier-ignore
      const table: Array<[query: Record<string, string>, expected: number[]]> = [
        [{ limit: '0' }, []], [{ limit: '5' }, [1, 2, 3, 4, 5]], [{ limit: '5', offset: '5' }, [6, 7, 8]], [{ offset: '7' }, [8]],
        [{ offset: '8' }, []], [{ offset: '1000000' }, []], [{ limit: '2', offset: '2' }, [3, 4]],
      ];
      for (const [query, expected] of table) {
        const reply = await client.get('hosts', 'search', query);
        expect(idsOf(reply), JSON.stringify(query)).to.deep.equal(expected);
        expect(reply.body.data.count).to.equal(8);
      }
      refused(await client.get('hosts', 'search', { limit: '6' }), 'limit', 'max');
      for (const limit of ['-1', '2.5', 'ten', '']) refused(await client.get('hosts', 'search', { limit }), 'limit', 'type');
      refused(await client.get('hosts', 'search', { offset: '-3' }), 'offset', 'type');
    });

    it('orders by an allowed column either way (NULL first ascending, text byte for byte); any other is 400 naming the field', async () => {
      // prettier-ignore
      const table: Array<[query: Record<string, string>, expected: number[]]> = [
        [{ sort: 'name', limit: '5' }, [3, 5, 6, 7, 4]], [{ sort: '-name', limit: '3' }, [8, 2, 1]],
        [{ sort: 'power', limit: '3' }, [4, 8, 5]], [{ sort: '-power', limit: '5' }, [3, 2, 1, 7, 6]],
        [{ sort: '-power', offset: '7' }, [4]], [{ sort: '-id', limit: '2' }, [8, 7]],
      ];
      for (const [query, expected] of table) expect(idsOf(await client.get('hosts', 'search', query)), JSON.stringify(query)).to.deep.equal(expected);
      for (const sort of ['status', 'name; DROP TABLE hosts', '--name', 'NAME'])
        refused(await client.get('hosts', 'search', { sort }), 'sort', 'allowed_values');
    });

    it('update with an in and an optional condition touches only the matching rows', async () => {
      const close = await client.post('hosts', 'close', { ids: [5, 6, 7], status: 'open' });
      expect(close.body.data).to.deep.equal({ affected: 2 });
      expect((await client.post('hosts', 'close', { ids: [] })).body.data).to.deep.equal({ affected: 0 });
      expect((await client.post('hosts', 'close', { ids: [1] })).body.data).to.deep.equal({ affected: 1 });
      expect(idsOf(await client.post('hosts', `status/${OPERATORS.indexOf('=')}`, { v: 'closed' }))).to.deep.equal([1, 2, 5, 6, 7]);
    });
  });
}

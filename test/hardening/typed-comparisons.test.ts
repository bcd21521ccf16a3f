import { expect } from 'chai';
import type { Database } from '@tkgate/core';
import { dialects } from '../support/databases.js';
import { toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * A request value is compared with (or written to) a column as the column's own type: MySQL/MariaDB would
 * otherwise cast a text column to a number when it meets 0, false or true, and match every row.
 */
async function createThings(db: Database): Promise<void> {
  await db.schema.createTable('things', (table) => {
    table.increments('id').primary();
    table.string('title', 50).nullable();
    table.integer('qty').notNullable();
    table.bigInteger('big').notNullable();
    table.boolean('flag').notNullable();
    table.decimal('price', 10, 2).notNullable();
  });
  await db('things').insert([
    { title: 'alpha', qty: 12, big: '9007199254740992', flag: true, price: '1.50' },
    { title: 'beta', qty: 0, big: '9007199254740993', flag: false, price: '2.00' },
    { title: '0', qty: 7, big: '5', flag: false, price: '0.00' },
    { title: null, qty: 1, big: '6', flag: true, price: '3.25' },
  ]);
}

const select = (path: string, where: Record<string, unknown>) => ({
  path,
  method: ['GET', 'POST'],
  type: 'internal',
  pseudo_querys: [{ select: 'things', columns: ['id'], where, order_by: 'id' }],
});
const typed = {
  name: 'typed',
  type: 'app',
  endpoints: [
    select('by-title', { title: '$payload.title' }),
    select('by-qty', { qty: '$payload.qty' }),
    select('by-big', { big: '$payload.big' }),
    select('by-flag', { flag: '$payload.flag' }),
    select('by-price', { price: '$payload.price' }),
    select('by-title-literal', { title: 0 }),
    select('by-username', { qty: '$context.username' }),
    { path: 'lookup', method: 'POST', type: 'internal', handler: 'echo', inject_db_context: ['things.id?title=$payload.title as ids'] },
    {
      path: 'rename',
      method: 'POST',
      type: 'internal',
      pseudo_querys: [{ update: 'things', set: { title: '$payload.title' }, where: { id: '$payload.id' } }],
    },
    {
      path: 'add',
      method: 'POST',
      type: 'internal',
      pseudo_querys: [{ insert: 'things', values: { title: '$payload.title', qty: '$payload.qty', big: 1, flag: '$payload.flag', price: 1 } }],
    },
    { path: 'remove', method: 'POST', type: 'internal', pseudo_querys: [{ delete: 'things', where: { title: '$payload.title' } }] },
  ],
};

for (const dialect of dialects) {
  describe(`typed comparisons with columns (${dialect.name})`, () => {
    const s = withGateway(
      dialect,
      [{ username: 'tess' }],
      {},
      {
        toolkitsDir: toolkitDir({ 'typed.yaml': typed }),
        prepare: createThings,
      },
    );
    const client = async () => toolkitClient(s.gateway.base, await s.login('tess'));
    const ids = (reply: { status: number; body: any }) => {
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return (reply.body.data as Array<{ id: number }>).map((row) => row.id);
    };
    const refused = (reply: { status: number; body: any }, field: string) => {
      expect(reply.status, JSON.stringify(reply.body)).to.equal(400);
      expect(reply.body.error.code).to.equal('invalid_payload');
      expect(reply.body.error.details[0]).to.include({ field, rule: 'type' });
    };

    it('a number compared with a text column is its decimal text: 0 finds the row titled "0", not every row', async () => {
      const c = await client();
      expect(ids(await c.post('typed', 'by-title', { title: 0 }))).to.deep.equal([3]);
      expect(ids(await c.post('typed', 'by-title', { title: 'alpha' }))).to.deep.equal([1]);
      expect(ids(await c.get('typed', 'by-title', { title: '0' }))).to.deep.equal([3]);
      expect(ids(await c.get('typed', 'by-title-literal'))).to.deep.equal([3]);
    });

    it('a boolean compared with a text column is 400, never a match of every row', async () => {
      const c = await client();
      refused(await c.post('typed', 'by-title', { title: false }), 'title');
      refused(await c.post('typed', 'by-title', { title: true }), 'title');
    });

    it("a context value that is not of the column's type matches nothing", async () => {
      expect(ids(await (await client()).get('typed', 'by-username'))).to.deep.equal([]);
    });

    it('null matches NULL only', async () => {
      expect(ids(await (await client()).post('typed', 'by-title', { title: null }))).to.deep.equal([4]);
    });

    it('integer columns take integers and their exact decimal strings; anything else is 400', async () => {
      const c = await client();
      expect(ids(await c.post('typed', 'by-qty', { qty: '12' }))).to.deep.equal([1]);
      expect(ids(await c.post('typed', 'by-qty', { qty: 0 }))).to.deep.equal([2]);
      expect(ids(await c.get('typed', 'by-qty', { qty: '7' }))).to.deep.equal([3]);
      for (const qty of ['12.5', '1e3', 'abc', '', ' 12', '012', 12.5, true, false]) refused(await c.post('typed', 'by-qty', { qty }), 'qty');
      refused(await c.get('typed', 'by-qty', { qty: 'abc' }), 'qty');
    });

    it('big integers compare exactly: digits beyond 2^53 as a string, never a rounded JSON number', async () => {
      const c = await client();
      expect(ids(await c.post('typed', 'by-big', { big: '9007199254740993' }))).to.deep.equal([2]);
      expect(ids(await c.post('typed', 'by-big', { big: '9007199254740992' }))).to.deep.equal([1]);
      expect(ids(await c.get('typed', 'by-big', { big: '9007199254740993' }))).to.deep.equal([2]);
      expect(ids(await c.post('typed', 'by-big', { big: 5 }))).to.deep.equal([3]);
      // JSON.parse turns this into 9007199254740992: not the number the client wrote.
      refused(await c.post('typed', 'by-big', undefined, { rawBody: '{"big":9007199254740993}', headers: { 'content-type': 'application/json' } }), 'big');
      refused(await c.post('typed', 'by-big', { big: '99999999999999999999999' }), 'big');
    });

    it('boolean columns take true/false, 1/0 and their strings', async () => {
      const c = await client();
      expect(ids(await c.post('typed', 'by-flag', { flag: true }))).to.deep.equal([1, 4]);
      expect(ids(await c.post('typed', 'by-flag', { flag: 0 }))).to.deep.equal([2, 3]);
      expect(ids(await c.get('typed', 'by-flag', { flag: 'false' }))).to.deep.equal([2, 3]);
      refused(await c.post('typed', 'by-flag', { flag: 'yes' }), 'flag');
      refused(await c.post('typed', 'by-flag', { flag: 2 }), 'flag');
    });

    it('decimal columns take numbers and numeric strings', async () => {
      const c = await client();
      expect(ids(await c.post('typed', 'by-price', { price: 1.5 }))).to.deep.equal([1]);
      expect(ids(await c.get('typed', 'by-price', { price: '3.25' }))).to.deep.equal([4]);
      refused(await c.post('typed', 'by-price', { price: 'cheap' }), 'price');
      refused(await c.post('typed', 'by-price', { price: false }), 'price');
    });

    it('inject_db_context filters compare the same way', async () => {
      const c = await client();
      const found = await c.post('typed', 'lookup', { title: 0 });
      expect(found.status).to.equal(200);
      expect(found.body.data.db_context.ids).to.deep.equal([3]);
      refused(await c.post('typed', 'lookup', { title: false }), 'title');
    });

    it('writes convert the same way, and a value that does not convert writes nothing', async () => {
      const c = await client();
      refused(await c.post('typed', 'rename', { id: 2, title: true }), 'title');
      refused(await c.post('typed', 'rename', { id: '2x', title: 'gamma' }), 'id');
      refused(await c.post('typed', 'add', { title: 'new', qty: 'many', flag: true }), 'qty');
      refused(await c.post('typed', 'remove', { title: false }), 'title');
      expect(
        await s.bed
          .db('things')
          .count({ n: '*' })
          .first()
          .then((row) => Number(row!.n)),
      ).to.equal(4);
      expect((await s.bed.db('things').where({ id: 2 }).first())!.title).to.equal('beta');

      const renamed = await c.post('typed', 'rename', { id: '2', title: 42 });
      expect(renamed.body.data).to.deep.equal({ affected: 1 });
      expect((await s.bed.db('things').where({ id: 2 }).first())!.title).to.equal('42');
      const added = await c.post('typed', 'add', { title: 'new', qty: '3', flag: 'true' });
      expect(added.status, JSON.stringify(added.body)).to.equal(200);
      const row = (await s.bed.db('things').where({ title: 'new' }).first())!;
      expect(Number(row.qty)).to.equal(3);
      expect(Number(row.flag)).to.equal(1);
      expect((await c.post('typed', 'remove', { title: 'new' })).body.data).to.deep.equal({ affected: 1 });
    });
  });
}

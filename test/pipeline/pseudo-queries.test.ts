import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { createToolkitTables } from '../support/tables.js';
import { toolkitDir } from '../support/toolkit-files.js';

const mine = { owner_id: '$context.user_id' };
const board = {
  name: 'board',
  type: 'app',
  endpoints: [
    { path: 'list', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'items', columns: ['id', 'title', 'status'], where: mine, order_by: 'id' }] },
    { path: 'newest', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'items', columns: ['title'], where: mine, order_by: ['-id'], limit: 1 }] },
    {
      path: 'add',
      method: 'POST',
      type: 'internal',
      client_filter: { allowed_fields: ['title'] },
      pseudo_querys: [{ insert: 'items', values: { owner_id: '$context.user_id', title: '$payload.title' } }],
    },
    {
      path: 'close',
      method: 'POST',
      type: 'internal',
      client_filter: { field_rules: { id: { type: 'integer' } } },
      pseudo_querys: [{ update: 'items', set: { status: 'closed' }, where: { id: '$payload.id', ...mine } }],
    },
    { path: 'remove', method: 'POST', type: 'internal', pseudo_querys: [{ delete: 'items', where: { id: '$payload.id', ...mine } }] },
    {
      path: 'add-two',
      method: 'POST',
      type: 'internal',
      pseudo_querys: [
        { name: 'first', insert: 'items', values: { owner_id: '$context.user_id', title: '$payload.a' } },
        { name: 'second', insert: 'items', values: { owner_id: '$context.user_id', title: '$payload.b' } },
      ],
    },
    {
      path: 'summary',
      method: 'GET',
      type: 'internal',
      pseudo_querys: [
        { name: 'open', select: 'items', columns: ['title'], where: { ...mine, status: 'open' }, order_by: 'id' },
        { name: 'closed', select: 'items', columns: ['title'], where: { ...mine, status: 'closed' }, order_by: 'id' },
      ],
    },
    {
      path: 'claim',
      method: 'POST',
      type: 'internal',
      inject_db_context: ['users.username as login'],
      pseudo_querys: [{ insert: 'items', values: { owner_id: '$context.user_id', title: '$db_context.login', status: 'claimed' } }],
    },
  ],
};

for (const dialect of dialects) {
  describe(`internal endpoints: pseudo_querys (${dialect.name})`, () => {
    const s = withGateway(
      dialect,
      [{ username: 'sara' }, { username: 'tom' }],
      {},
      {
        toolkitsDir: toolkitDir({ 'board.yaml': board }),
        prepare: createToolkitTables,
      },
    );
    const as = async (username: string) => toolkitClient(s.gateway.base, await s.login(username));
    const count = async () => Number((await s.bed.db('items').count({ n: '*' }).first())!.n);

    it('insert answers the new id; select is scoped to the caller by $context.user_id', async () => {
      const sara = await as('sara');
      const tom = await as('tom');
      const first = await sara.post('board', 'add', { title: 'sara-1' });
      expect(first.status).to.equal(200);
      expect(first.body.data).to.have.keys('id');
      expect(first.body.data.id).to.be.a('number');
      await sara.post('board', 'add', { title: 'sara-2' });
      await tom.post('board', 'add', { title: 'tom-1' });
      const list = await sara.get('board', 'list');
      expect(list.body.data).to.deep.equal([
        { id: first.body.data.id, title: 'sara-1', status: 'open' },
        { id: first.body.data.id + 1, title: 'sara-2', status: 'open' },
      ]);
      expect((await tom.get('board', 'list')).body.data.map((row: { title: string }) => row.title)).to.deep.equal(['tom-1']);
      expect((await sara.get('board', 'newest')).body.data).to.deep.equal([{ title: 'sara-2' }]);
    });

    it("update and delete answer {affected} and never touch another user's rows", async () => {
      const sara = await as('sara');
      const tom = await as('tom');
      const [tomItem] = (await tom.get('board', 'list')).body.data;
      const [saraItem] = (await sara.get('board', 'list')).body.data;
      expect((await sara.post('board', 'close', { id: tomItem.id })).body.data).to.deep.equal({ affected: 0 });
      expect((await sara.post('board', 'close', { id: saraItem.id })).body.data).to.deep.equal({ affected: 1 });
      expect((await sara.post('board', 'remove', { id: tomItem.id })).body.data).to.deep.equal({ affected: 0 });
      const summary = await sara.get('board', 'summary');
      expect(summary.body.data).to.deep.equal({ open: [{ title: 'sara-2' }], closed: [{ title: 'sara-1' }] });
      expect((await sara.post('board', 'remove', { id: saraItem.id })).body.data).to.deep.equal({ affected: 1 });
      expect((await tom.get('board', 'list')).body.data).to.have.length(1);
    });

    it('runs several queries in one transaction: a failing second insert leaves no first', async () => {
      const sara = await as('sara');
      const before = await count();
      const ok = await sara.post('board', 'add-two', { a: 'pair-a', b: 'pair-b' });
      expect(ok.status).to.equal(200);
      expect(Object.keys(ok.body.data)).to.deep.equal(['first', 'second']);
      const failed = await sara.post('board', 'add-two', { a: 'fresh-title', b: 'pair-a' });
      expect(failed.status).to.equal(500);
      expect(failed.body.error).to.deep.equal({ code: 'internal_error', message: 'internal error' });
      expect(await count()).to.equal(before + 2);
      expect(await s.bed.db('items').where({ title: 'fresh-title' })).to.have.length(0);
    });

    it('answers 400 for a payload field a query needs, and writes nothing', async () => {
      const sara = await as('sara');
      const before = await count();
      const reply = await sara.post('board', 'add-two', { a: 'only-a' });
      expect(reply.status).to.equal(400);
      expect(reply.body.error.details).to.deep.equal([{ field: 'b', rule: 'required', message: 'b is needed by pseudo query second' }]);
      const object = await sara.post('board', 'add', { title: { $gt: '' } });
      expect(object.status).to.equal(400);
      expect(object.body.error.details[0]).to.include({ field: 'title', rule: 'type' });
      expect(await count()).to.equal(before);
    });

    it('binds $db_context values', async () => {
      const tom = await as('tom');
      const reply = await tom.post('board', 'claim');
      expect(reply.status).to.equal(200);
      const row = await s.bed.db('items').where({ id: reply.body.data.id }).first('title', 'status', 'owner_id');
      expect(row).to.deep.equal({ title: 'tom', status: 'claimed', owner_id: s.ids.tom });
    });

    it('shows a row another process wrote on the very next read (selects are cached on SQLite only until anyone commits)', async () => {
      const sara = await as('sara');
      await sara.post('board', 'add', { title: 'before-outside-write' });
      const before = await sara.get('board', 'newest');
      expect(before.body.data).to.deep.equal([{ title: 'before-outside-write' }]);
      expect((await sara.get('board', 'newest')).body.data).to.deep.equal([{ title: 'before-outside-write' }]);
      // The test's own connection is another process's view of the database: the gateway did not write this.
      await s.bed.db('items').insert({ owner_id: s.ids.sara, title: 'written-outside', status: 'open' });
      const after = await sara.get('board', 'newest');
      expect(after.body.data).to.deep.equal([{ title: 'written-outside' }]);
      await s.bed.db('items').where({ title: 'written-outside' }).update({ title: 'renamed-outside' });
      expect((await sara.get('board', 'newest')).body.data).to.deep.equal([{ title: 'renamed-outside' }]);
    });
  });
}

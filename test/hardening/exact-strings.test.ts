import { expect } from 'chai';
import type { Database } from '@tkgate/core';
import { dialects } from '../support/databases.js';
import { toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * String equality in internal queries and inject_db_context filters is byte for byte
 * on both databases. The table is made as an operator would, so on MariaDB its text column has the
 * server's default collation (case-insensitive, PAD SPACE).
 */
async function createTags(db: Database): Promise<void> {
  await db.schema.createTable('tags', (table) => {
    table.increments('id').primary();
    table.string('label', 50).notNullable().index();
    table.integer('hits').notNullable().defaultTo(0);
  });
  await db('tags').insert([{ label: 'Alpha' }, { label: 'beta' }]);
}

const tags = {
  name: 'tags',
  type: 'app',
  endpoints: [
    { path: 'find', method: 'POST', type: 'internal', pseudo_querys: [{ select: 'tags', columns: ['id', 'label'], where: { label: '$payload.label' } }] },
    // Two queries: not the prepared single select, but a transaction through knex.
    {
      path: 'find-twice',
      method: 'POST',
      type: 'internal',
      pseudo_querys: [
        { name: 'first', select: 'tags', columns: ['id'], where: { label: '$payload.label' } },
        { name: 'second', select: 'tags', columns: ['id'], where: { label: '$payload.label' } },
      ],
    },
    { path: 'hit', method: 'POST', type: 'internal', pseudo_querys: [{ update: 'tags', set: { hits: 1 }, where: { label: '$payload.label' } }] },
    { path: 'drop', method: 'POST', type: 'internal', pseudo_querys: [{ delete: 'tags', where: { label: '$payload.label' } }] },
    { path: 'literal', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'tags', columns: ['id'], where: { label: 'ALPHA' } }] },
    {
      path: 'context',
      method: 'POST',
      type: 'internal',
      handler: 'echo',
      client_filter: { allowed_fields: ['label'] },
      inject_db_context: ['tags.id?label=$payload.label as ids'],
    },
  ],
};

for (const dialect of dialects) {
  describe(`string equality in internal queries is byte for byte (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'eli' }], {}, { toolkitsDir: toolkitDir({ 'tags.yaml': tags }), prepare: createTags });
    let client: ReturnType<typeof toolkitClient>;
    before(async () => (client = toolkitClient(s.gateway.base, await s.login('eli'))));

    it('matches only the exact string in a select, with or without a transaction, and in a literal', async () => {
      expect((await client.post('tags', 'find', { label: 'Alpha' })).body.data).to.deep.equal([{ id: 1, label: 'Alpha' }]);
      for (const label of ['alpha', 'ALPHA', 'Alpha ', 'Álpha']) {
        expect((await client.post('tags', 'find', { label })).body.data, label).to.deep.equal([]);
        expect((await client.post('tags', 'find-twice', { label })).body.data, label).to.deep.equal({ first: [], second: [] });
      }
      expect((await client.post('tags', 'find-twice', { label: 'beta' })).body.data).to.deep.equal({ first: [{ id: 2 }], second: [{ id: 2 }] });
      expect((await client.get('tags', 'literal')).body.data).to.deep.equal([]);
    });

    it('updates and deletes only rows of the exact string', async () => {
      expect((await client.post('tags', 'hit', { label: 'BETA' })).body.data).to.deep.equal({ affected: 0 });
      expect((await client.post('tags', 'hit', { label: 'beta ' })).body.data).to.deep.equal({ affected: 0 });
      expect((await client.post('tags', 'drop', { label: 'bEta' })).body.data).to.deep.equal({ affected: 0 });
      expect(await s.bed.db('tags').where({ id: 2 }).first('hits')).to.deep.equal({ hits: 0 });
      expect((await client.post('tags', 'hit', { label: 'beta' })).body.data).to.deep.equal({ affected: 1 });
    });

    it('filters inject_db_context by the exact string', async () => {
      const ids = async (label: string) => (await client.post('tags', 'context', { label })).body.data.db_context.ids;
      expect(await ids('Alpha')).to.deep.equal([1]);
      expect(await ids('alpha')).to.deep.equal([]);
      expect(await ids('Alpha  ')).to.deep.equal([]);
    });
  });
}

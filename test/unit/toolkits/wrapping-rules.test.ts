import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { compileWrapping, applyWrapping } =
  await coreModule<typeof import('../../../packages/core/dist/toolkits/wrapping-rules.js')>('toolkits/wrapping-rules.js');
type Issues = Parameters<typeof compileWrapping>[2];
type Context = Parameters<typeof applyWrapping>[0];

describe('unit: overwrite_wrapping (toolkits/wrapping-rules.ts)', () => {
  const context = { user_id: 1, username: 'uma', power: 2, request_id: 'r', payload: {}, db_context: { team: 't1', region: 'eu' } } as unknown as Context;

  it('removes fields and promotes db_context keys, in order, without touching the given context', () => {
    const issues: Issues = [];
    const wrapping = compileWrapping(['-power', 'team'], ['team', 'region'], issues, ['overwrite_wrapping']);
    expect(issues).to.deep.equal([]);
    expect([...wrapping.dbContextKeys]).to.deep.equal(['region']);
    expect(wrapping.contextFields.has('power')).to.equal(false);
    expect(wrapping.contextFields.has('team')).to.equal(true);
    const wrapped = applyWrapping(context, wrapping.rules);
    expect(wrapped).to.deep.equal({ user_id: 1, username: 'uma', request_id: 'r', payload: {}, team: 't1', db_context: { region: 'eu' } });
    expect(context.db_context).to.deep.equal({ team: 't1', region: 'eu' });
    expect(applyWrapping(context, [])).to.equal(context);
  });

  it('names each impossible entry by its index', () => {
    const issues: Issues = [];
    compileWrapping(['-nope', 'username', 'missing', '-db_context', 'team'], ['team'], issues, ['overwrite_wrapping']);
    expect(issues.map((issue) => [issue.path.join('.'), issue.message])).to.deep.equal([
      [
        'overwrite_wrapping.0',
        `cannot remove nope: the context has no such field (it has user_id, username, power, core_group_id, core_group_name, toolkit_group, request_id, payload, db_context)`,
      ],
      ['overwrite_wrapping.1', 'username may not be replaced by a db_context value'],
      ['overwrite_wrapping.2', 'db_context has no key missing to promote (inject_db_context gives: team)'],
      ['overwrite_wrapping.4', 'cannot promote team: db_context was removed by an earlier entry'],
    ]);
  });
});

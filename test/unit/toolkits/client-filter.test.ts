import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { compileClientFilter, applyClientFilter, patternCache } =
  await coreModule<typeof import('../../../packages/core/dist/toolkits/client-filter.js')>('toolkits/client-filter.js');
type Config = Parameters<typeof compileClientFilter>[0];
type Issues = Parameters<typeof compileClientFilter>[1];

function compiled(config: Config) {
  const issues: Issues = [];
  const filter = compileClientFilter(config, issues, ['client_filter']);
  expect(issues).to.deep.equal([]);
  return filter;
}

describe('unit: client_filter (toolkits/client-filter.ts)', () => {
  it('strips fields not allowed, and names every missing required field', () => {
    const filter = compiled({ allowed_fields: ['a', 'b'], required_fields: ['a', 'b'] });
    const { payload, problems } = applyClientFilter(filter, { b: 1, toString: 'x', extra: true }, 'json');
    expect({ ...payload }).to.deep.equal({ b: 1 });
    expect(problems).to.deep.equal([{ field: 'a', rule: 'required', message: 'a is required' }]);
  });

  it('checks type, max_length (in characters), pattern and allowed_values, one problem per field', () => {
    const filter = compiled({
      field_rules: {
        n: { type: 'integer' },
        s: { type: 'string', max_length: 3 },
        p: { type: 'string', pattern: '^[a-z]+$' },
        v: { allowed_values: ['x', 1] },
      },
    });
    expect(applyClientFilter(filter, { n: 2, s: 'ééé', p: 'abc', v: 1 }, 'json').problems).to.deep.equal([]);
    const { problems } = applyClientFilter(filter, { n: 1.5, s: 'abcd', p: 'ABC', v: 'y' }, 'json');
    expect(problems.map((problem) => [problem.field, problem.rule, problem.message])).to.deep.equal([
      ['n', 'type', 'n must be an integer'],
      ['s', 'max_length', 's must be at most 3 long'],
      ['p', 'pattern', 'p must match ^[a-z]+$'],
      ['v', 'allowed_values', 'v must be one of "x", 1'],
    ]);
  });

  it('coerces query and form strings to the declared type, never JSON values', () => {
    const filter = compiled({ field_rules: { n: { type: 'integer' }, b: { type: 'boolean' } } });
    const fromQuery = applyClientFilter(filter, { n: '42', b: '1' }, 'text-fields');
    expect(fromQuery.problems).to.deep.equal([]);
    expect({ ...fromQuery.payload }).to.deep.equal({ n: 42, b: true });
    expect(applyClientFilter(filter, { n: '42' }, 'json').problems.map((problem) => problem.rule)).to.deep.equal(['type']);
    expect(applyClientFilter(filter, { b: 'yes' }, 'text-fields').problems.map((problem) => problem.rule)).to.deep.equal(['type']);
  });

  it('names contradictions and bad patterns at compile time, by path', () => {
    const issues: Issues = [];
    compileClientFilter({ allowed_fields: ['a'], required_fields: ['b'], field_rules: { c: { type: 'integer', max_length: 2, pattern: '(' } } }, issues, [
      'client_filter',
    ]);
    expect(issues.map((issue) => issue.path.join('.'))).to.deep.equal([
      'client_filter.required_fields.0',
      'client_filter.field_rules.c',
      'client_filter.field_rules.c.max_length',
      'client_filter.field_rules.c.pattern',
      'client_filter.field_rules.c.pattern',
    ]);
  });

  it('shares one compiled pattern between the rules of a pass (patternCache), and names a bad one at every use', () => {
    const compilePattern = patternCache();
    const rules = { field_rules: { a: { type: 'string' as const, max_length: 10, pattern: '^[a-z]+$' } } };
    const first = compileClientFilter(rules, [], ['x'], compilePattern);
    const second = compileClientFilter(rules, [], ['y'], compilePattern);
    expect(second.fieldRules.get('a')!.pattern!.regex).to.equal(first.fieldRules.get('a')!.pattern!.regex);
    const apart = compileClientFilter(rules, [], ['z']);
    expect(apart.fieldRules.get('a')!.pattern!.regex, 'without a cache, a compile of its own').to.not.equal(first.fieldRules.get('a')!.pattern!.regex);
    const payload = { a: 'abc' };
    expect(applyClientFilter(second, payload, 'json').problems).to.deep.equal([]);
    expect(applyClientFilter(second, { a: 'ABC' }, 'json').problems).to.have.length(1);
    for (const at of ['p', 'q']) {
      const issues: Issues = [];
      compileClientFilter({ field_rules: { b: { type: 'string', max_length: 5, pattern: '(' } } }, issues, [at], compilePattern);
      expect(issues.map((issue) => issue.path.join('.'))).to.deep.equal([`${at}.field_rules.b.pattern`]);
    }
  });
});

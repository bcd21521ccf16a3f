import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { FieldChoices, MAX_CACHED_LISTS, MAX_CHOICES, choiceArgs, isChoice } =
  await coreModule<typeof import('../../../packages/core/src/parameters/field-choices.js')>('parameters/field-choices.js');
const { SecretMask, MAX_PASSING_VALUES } = await coreModule<typeof import('../../../packages/core/src/secrets/secret-mask.js')>('secrets/secret-mask.js');

/** A toolkit whose choices endpoint takes GET, and a caller that answers what the test says and counts the calls. */
const toolkit = { name: 'inv', kind: 'app', routes: new Map([['hosts', new Map([['GET', {}]])]]) };
function answering(body: (query: Record<string, string> | undefined) => { status: number; body: unknown }) {
  const calls: Array<{ method: string; query?: Record<string, string> }> = [];
  return {
    calls,
    caller: {
      call: async (call: { method: string; query?: Readonly<Record<string, string>> }) => {
        calls.push({ method: call.method, query: call.query as Record<string, string> });
        return body(call.query as Record<string, string>);
      },
    },
  };
}
const rule = (extra: Record<string, unknown> = {}) => ({ endpoint: 'hosts', value: 'name', label: 'title', args: [], cacheMs: 0, ...extra });
const asker = (key: string) => ({ key, as: undefined });

describe('unit: a field’s choices (parameters/field-choices.ts)', () => {
  it('reads rows, {rows} and a named query’s rows, with labels defaulting to the value', async () => {
    for (const data of [[{ name: 'a', title: 'A' }, { name: 'b' }], { rows: [{ name: 'a', title: 'A' }, { name: 'b' }] }]) {
      const { caller } = answering(() => ({ status: 200, body: { data } }));
      expect(await new FieldChoices(caller).choices(toolkit, 'host', rule(), {}, asker('u1'))).to.deep.equal([
        { value: 'a', label: 'A' },
        { value: 'b', label: 'b' },
      ]);
    }
    const { caller } = answering(() => ({ status: 200, body: { data: { hosts: ['x', 'y'], other: [] } } }));
    const plain = { endpoint: 'hosts', args: [], cacheMs: 0, query: 'hosts' };
    expect(await new FieldChoices(caller).choices(toolkit, 'host', plain, {}, asker('u1'))).to.deep.equal([
      { value: 'x', label: 'x' },
      { value: 'y', label: 'y' },
    ]);
  });

  it('fails at the field (502 choices_failed) on a refusal, a wrong shape, a row without its value, or too many choices', async () => {
    const failures: Array<[unknown, number, RegExp]> = [
      [{ error: { code: 'forbidden' } }, 403, /answered 403 forbidden/],
      [{ data: { nope: 1 } }, 200, /answered no list/],
      [{ data: [{ title: 'no name' }] }, 200, /has no name value/],
      [{ data: Array.from({ length: MAX_CHOICES + 1 }, (_, i) => ({ name: `h${i}` })) }, 200, /more than 1000 choices/],
    ];
    for (const [body, status, message] of failures) {
      const { caller } = answering(() => ({ status, body }));
      const failed = await new FieldChoices(caller).choices(toolkit, 'host', rule(), {}, asker('u1')).catch((err: unknown) => err);
      expect(failed).to.include({ status: 502, code: 'choices_failed' });
      expect((failed as { details: Array<{ field: string; message: string }> }).details[0]!.field).to.equal('host');
      expect((failed as { details: Array<{ message: string }> }).details[0]!.message).to.match(message);
    }
  });

  it('keeps lists per caller and args for `cache`, at most MAX_CACHED_LISTS of them', async () => {
    const { caller, calls } = answering((query) => ({ status: 200, body: { data: [{ name: query?.env ?? 'none' }] } }));
    const choices = new FieldChoices(caller);
    const cached = rule({ cacheMs: 60_000, args: [['env', { field: 'env' }]] });
    await choices.choices(toolkit, 'host', cached, { env: 'prod' }, asker('u1'));
    await choices.choices(toolkit, 'host', cached, { env: 'prod' }, asker('u1'));
    expect(calls.length, 'the same caller and args: kept').to.equal(1);
    expect(calls[0]).to.deep.equal({ method: 'GET', query: { env: 'prod' } });
    await choices.choices(toolkit, 'host', cached, { env: 'prod' }, asker('u2'));
    await choices.choices(toolkit, 'host', cached, { env: 'dev' }, asker('u1'));
    expect(calls.length, 'another caller, other args: asked').to.equal(3);
    for (let i = 0; i < MAX_CACHED_LISTS; i++) await choices.choices(toolkit, 'host', cached, { env: `e${i}` }, asker('u3'));
    expect((choices as unknown as { cached: Map<string, unknown> }).cached.size).to.equal(MAX_CACHED_LISTS);
    const before = calls.length;
    await choices.choices(toolkit, 'host', cached, { env: 'prod' }, asker('u1'));
    expect(calls.length, 'the oldest list was dropped').to.equal(before + 1);
  });

  it('takes args from the payload, names a missing one, and compares a query string’s text with the choices', () => {
    const cascading = rule({
      args: [
        ['env', { field: 'env' }],
        ['fixed', { fixed: 3 }],
      ],
    });
    expect(choiceArgs(cascading, { env: 'prod' })).to.deep.equal({ args: { env: 'prod', fixed: 3 } });
    expect(choiceArgs(cascading, {})).to.deep.equal({ missing: 'env' });
    expect(isChoice([{ value: 3, label: '3' }], '3')).to.equal(true);
    expect(isChoice([{ value: 'a', label: 'a' }], ['a'])).to.equal(false);
  });
});

describe('unit: secret fields’ values in the mask (SecretMask.addPassing)', () => {
  it('masks the most recent MAX_PASSING_VALUES values, and references’ values for good', () => {
    const mask = new SecretMask();
    mask.add('reference-value');
    mask.addPassing('first-field-value');
    expect(mask.mask('first-field-value and reference-value')).to.equal('*** and ***');
    for (let i = 0; i < MAX_PASSING_VALUES; i++) mask.addPassing(`field-value-${i}`);
    expect(mask.mask('first-field-value'), 'the oldest passing value dropped').to.equal('first-field-value');
    expect(mask.mask(`field-value-${MAX_PASSING_VALUES - 1} reference-value`)).to.equal('*** ***');
    mask.addPassing('reference-value');
    for (let i = 0; i < MAX_PASSING_VALUES; i++) mask.addPassing(`other-value-${i}`);
    expect(mask.mask('reference-value'), 'a reference’s value is never dropped').to.equal('***');
  });

  it('keeps a held value (a call or run in progress) whatever floods in, until released', () => {
    const mask = new SecretMask();
    const release = mask.hold('run-token-value');
    const again = mask.hold('run-token-value');
    for (let i = 0; i < MAX_PASSING_VALUES * 2; i++) mask.addPassing(`flood-value-${i}`);
    expect(mask.mask('run-token-value')).to.equal('***');
    release();
    release();
    expect(mask.mask('run-token-value'), 'held by the second still').to.equal('***');
    again();
    for (let i = 0; i < MAX_PASSING_VALUES; i++) mask.addPassing(`more-flood-${i}`);
    expect(mask.mask('run-token-value'), 'released and pushed out').to.equal('run-token-value');
  });
});

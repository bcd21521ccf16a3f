import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { call, toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const filters = {
  name: 'filters',
  type: 'app',
  endpoints: [
    {
      path: 'typed',
      method: ['GET', 'POST'],
      type: 'internal',
      handler: 'echo',
      client_filter: {
        allowed_fields: ['q', 'status', 'count', 'ratio', 'flag', 'tags', 'meta', 'title'],
        required_fields: ['q'],
        field_rules: {
          q: { type: 'string', max_length: 8, pattern: '^[a-z ]+$' },
          status: { type: 'string', allowed_values: ['open', 'closed'] },
          count: { type: 'integer', allowed_values: [1, 2, 3] },
          ratio: { type: 'number' },
          flag: { type: 'boolean' },
          tags: { type: 'array', max_length: 2 },
          meta: { type: 'object' },
          title: { type: 'string', max_length: 4 },
        },
      },
    },
    {
      path: 'json-only',
      method: 'POST',
      type: 'internal',
      handler: 'echo',
      client_filter: { max_body_bytes: 100, allowed_content_types: ['application/json'] },
    },
    {
      path: 'form',
      method: 'POST',
      type: 'internal',
      handler: 'echo',
      client_filter: { allowed_content_types: ['application/x-www-form-urlencoded'], field_rules: { n: { type: 'integer' }, on: { type: 'boolean' } } },
    },
    {
      // A bounded pattern without max_length: loaded on the previous release, and still (its own bound, 20, applies).
      path: 'bounded',
      method: 'POST',
      type: 'internal',
      handler: 'echo',
      client_filter: { field_rules: { code: { type: 'string', pattern: '^[a-z]{1,20}$' }, either: { pattern: '^(?:[a-z]{1,30}|[0-9]{1,50})$' } } },
    },
    {
      path: 'redos',
      method: 'POST',
      type: 'internal',
      handler: 'echo',
      client_filter: { field_rules: { s: { type: 'string', pattern: '^(a+)+$' }, t: { pattern: '^(a|aa)*$' } } },
    },
  ],
};

for (const dialect of dialects) {
  describe(`client_filter (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'rita' }], {}, { toolkitsDir: toolkitDir({ 'filters.yaml': filters }) });
    const client = async () => toolkitClient(s.gateway.base, await s.login('rita'));

    it('strips fields that are not allowed, silently', async () => {
      const reply = await (await client()).post('filters', 'typed', { q: 'hello', admin: true, __extra: 1 });
      expect(reply.status).to.equal(200);
      expect(reply.body.data.payload).to.deep.equal({ q: 'hello' });
    });

    it('passes every rule when the values fit', async () => {
      const payload = { q: 'two word', status: 'open', count: 2, ratio: 0.5, flag: false, tags: ['a', 'b'], meta: { k: 'v' } };
      const reply = await (await client()).post('filters', 'typed', payload);
      expect(reply.status).to.equal(200);
      expect(reply.body.data.payload).to.deep.equal(payload);
    });

    it('names every failing field and rule in one 400', async () => {
      const reply = await (
        await client()
      ).post('filters', 'typed', {
        status: 'pending',
        count: 2.5,
        ratio: 'half',
        flag: 'yes',
        tags: ['a', 'b', 'c'],
        meta: [1],
      });
      expect(reply.status).to.equal(400);
      expect(reply.body.error.code).to.equal('invalid_payload');
      const found = reply.body.error.details.map((d: { field: string; rule: string }) => `${d.field}:${d.rule}`).sort();
      expect(found).to.deep.equal(['count:type', 'flag:type', 'meta:type', 'q:required', 'ratio:type', 'status:allowed_values', 'tags:max_length'].sort());
      for (const detail of reply.body.error.details) expect(detail.message).to.be.a('string').and.include(detail.field);
    });

    it('checks max_length in characters, and pattern', async () => {
      const ok = await (await client()).post('filters', 'typed', { q: 'abcdefgh' });
      expect(ok.status).to.equal(200);
      const tooLong = await (await client()).post('filters', 'typed', { q: 'abcdefghi' });
      expect(tooLong.body.error.details).to.deep.equal([{ field: 'q', rule: 'max_length', message: 'q must be at most 8 long' }]);
      // Characters are code points: four emoji are eight UTF-16 units, and within max_length 4.
      const emoji = await (await client()).post('filters', 'typed', { q: 'abc', title: '\u{1F600}\u{1F680}\u{1F4A1}\u{2705}' });
      expect(emoji.status, JSON.stringify(emoji.body)).to.equal(200);
      const fiveEmoji = await (await client()).post('filters', 'typed', { q: 'abc', title: '\u{1F600}\u{1F680}\u{1F4A1}\u{2705}\u{1F600}' });
      expect(fiveEmoji.body.error.details).to.deep.equal([{ field: 'title', rule: 'max_length', message: 'title must be at most 4 long' }]);
      const pattern = await (await client()).post('filters', 'typed', { q: 'ABC' });
      expect(pattern.body.error.details).to.deep.equal([{ field: 'q', rule: 'pattern', message: 'q must match ^[a-z ]+$' }]);
    });

    it('coerces GET query strings for integer, number and boolean rules', async () => {
      const reply = await (await client()).get('filters', 'typed', { q: 'abc', count: '3', ratio: '-1.25', flag: 'true' });
      expect(reply.status).to.equal(200);
      expect(reply.body.data.payload).to.deep.equal({ q: 'abc', count: 3, ratio: -1.25, flag: true });
      const bad = await (await client()).get('filters', 'typed', { q: 'abc', count: 'three', flag: 'maybe' });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).to.deep.equal(['count', 'flag']);
      const notAllowed = await (await client()).get('filters', 'typed', { q: 'abc', count: '4' });
      expect(notAllowed.body.error.details).to.deep.equal([{ field: 'count', rule: 'allowed_values', message: 'count must be one of 1, 2, 3' }]);
    });

    it('refuses a body over the endpoint max_body_bytes, a content type not allowed, and an unparseable body', async () => {
      const c = await client();
      const big = await c.post('filters', 'json-only', { text: 'x'.repeat(200) });
      expect(big.status).to.equal(400);
      expect(big.body.error.details).to.deep.equal([{ field: 'body', rule: 'max_body_bytes', message: 'the body must be at most 100 bytes' }]);
      const form = await c.post('filters', 'json-only', undefined, { rawBody: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(form.status).to.equal(400);
      expect(form.body.error.details[0]).to.include({ field: 'content-type', rule: 'allowed_content_types' });
      const broken = await c.post('filters', 'json-only', undefined, { rawBody: '{"a":', headers: { 'content-type': 'application/json' } });
      expect(broken.status).to.equal(400);
      expect(broken.body.error.details).to.deep.equal([{ field: 'body', rule: 'syntax', message: 'the body is not valid JSON' }]);
      const array = await c.post('filters', 'json-only', [1, 2]);
      expect(array.status).to.equal(400);
      expect(array.body.error.details).to.deep.equal([{ field: 'body', rule: 'type', message: 'the payload must be a JSON object' }]);
      const proto = await c.post('filters', 'json-only', undefined, {
        rawBody: '{"__proto__":{"admin":true}}',
        headers: { 'content-type': 'application/json' },
      });
      expect(proto.status).to.equal(400);
    });

    it('reads form bodies when allowed, coercing like query strings', async () => {
      const c = await client();
      const reply = await c.post('filters', 'form', undefined, { rawBody: 'n=42&on=1&s=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(reply.status).to.equal(200);
      expect(reply.body.data.payload).to.deep.equal({ n: 42, on: true, s: 'x' });
      const json = await c.post('filters', 'form', { n: 1 });
      expect(json.status).to.equal(400);
      expect(json.body.error.details[0].rule).to.equal('allowed_content_types');
    });

    it('answers a catastrophic-backtracking pattern with a hostile input at once', async () => {
      const c = await client();
      const hostile = 'a'.repeat(50_000) + '!';
      const started = Date.now();
      const reply = await c.post('filters', 'redos', { s: hostile, t: hostile });
      const took = Date.now() - started;
      expect(reply.status).to.equal(400);
      expect(reply.body.error.details.map((d: { field: string; rule: string }) => `${d.field}:${d.rule}`)).to.deep.equal(['s:pattern', 't:pattern']);
      // A backtracking engine needs longer than the age of the universe here; RE2 semantics are linear.
      expect(took).to.be.below(2000);
      const fine = await c.post('filters', 'redos', { s: 'aaaa', t: 'aaa' });
      expect(fine.status).to.equal(200);
    });

    it('loads a small bounded pattern without max_length (^[a-z]{1,20}$), and refuses longer values as not matching it', async () => {
      const c = await client();
      const fine = await c.post('filters', 'bounded', { code: 'a'.repeat(20), either: '9'.repeat(50) });
      expect(fine.status, JSON.stringify(fine.body)).to.equal(200);
      for (const [field, value, source] of [
        ['code', 'a'.repeat(21), '^[a-z]{1,20}$'],
        ['code', 'a'.repeat(100_000), '^[a-z]{1,20}$'],
        ['either', '9'.repeat(51), '^(?:[a-z]{1,30}|[0-9]{1,50})$'],
      ] as const) {
        const reply = await c.post('filters', 'bounded', { [field]: value });
        expect(reply.status).to.equal(400);
        expect(reply.body.error.details).to.deep.equal([{ field, rule: 'pattern', message: `${field} must match ${source}` }]);
      }
    });

    it('leaves a GET with a body unread and takes its payload from the query string', async () => {
      const token = await s.login('rita');
      const reply = await call('GET', `${s.gateway.base}/tk/app/filters/typed?q=abc`, { token });
      expect(reply.status).to.equal(200);
      expect(reply.body.data.payload).to.deep.equal({ q: 'abc' });
    });
  });
}

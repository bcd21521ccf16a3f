import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { repoRoot } from '../../support/paths.js';

/** The console's pure modules (packages/console/src), from their tsc build: no DOM needed. */
const consoleModule = <T>(file: string): Promise<T> => import(pathToFileURL(path.join(repoRoot, 'packages/console/dist/lib', file)).href) as Promise<T>;
const { formFields, buildRequest, detailsByField, choicesPath } =
  await consoleModule<typeof import('../../../packages/console/src/form-fields.js')>('form-fields.js');
const { SseParser, followEvents, stripAnsi } = await consoleModule<typeof import('../../../packages/console/src/sse.js')>('sse.js');

describe('console: a field with choices_from', () => {
  const [env, host, token] = formFields({
    requestBody: {
      content: {
        'application/json': {
          schema: {
            properties: {
              env: { 'x-tkgate-choices': { endpoint: 'envs', args: {} } },
              host: { 'x-tkgate-choices': { endpoint: 'hosts/list', args: { env: 'env' } } },
              token: { type: 'string', format: 'password' },
            },
          },
        },
      },
    },
  });

  it('is a select whose choices come from the form’s own endpoint, waiting for the fields its args name', () => {
    expect(env).to.include({ kind: 'select' });
    expect(host!.choices).to.deep.equal({ endpoint: 'hosts/list', args: { env: 'env' } });
    expect(choicesPath('/tk/app/inv/deploy', env!, {})).to.deep.equal({ path: '/choices/inv/deploy?field=env' });
    expect(choicesPath('/tk/app/inv/deploy', host!, { env: '' })).to.deep.equal({ waitFor: 'env' });
    expect(choicesPath('/tk/app/inv/deploy', host!, { env: 'prod & co' })).to.deep.equal({ path: '/choices/inv/deploy?field=host&env=prod+%26+co' });
  });

  it('marks a secret field', () => {
    expect(token).to.include({ kind: 'text', secret: true });
  });
});

describe('console: a form from an endpoint’s schema', () => {
  const post = {
    requestBody: {
      content: {
        'application/json': {
          schema: {
            required: ['name'],
            properties: {
              name: { type: 'string', maxLength: 12, pattern: '^[a-z]+$' },
              count: { type: 'integer' },
              ratio: { type: 'number' },
              colour: { enum: ['red', 'blue'] },
              level: { type: 'integer', enum: [1, 2] },
              loud: { type: 'boolean' },
              tags: { type: 'array', maxItems: 3 },
            },
          },
        },
      },
    },
    parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._~-]+$' } }],
  };

  it('makes text with maxlength and pattern, a select of allowed values, numbers, a checkbox, JSON, and marks required', () => {
    const fields = formFields(post);
    const by = Object.fromEntries(fields.map((field) => [field.name, field]));
    expect(fields.map((field) => field.name)).to.deep.equal(['id', 'name', 'count', 'ratio', 'colour', 'level', 'loud', 'tags']);
    expect(by.id).to.deep.include({ in: 'path', kind: 'text', required: true });
    expect(by.name).to.deep.include({ in: 'body', kind: 'text', required: true, maxLength: 12, pattern: '^[a-z]+$' });
    expect(by.count).to.deep.include({ kind: 'number', integer: true, required: false });
    expect(by.ratio).to.deep.include({ kind: 'number', integer: false });
    expect(by.colour).to.deep.include({ kind: 'select', options: ['red', 'blue'] });
    expect(by.level).to.deep.include({ kind: 'select', options: [1, 2] });
    expect(by.loud!.kind).to.equal('checkbox');
    expect(by.tags!.kind).to.equal('json');
  });

  it('reads query parameters of a GET', () => {
    const fields = formFields({
      parameters: [
        { name: 'n', in: 'query', required: false, schema: { type: 'integer' } },
        { name: 'x', in: 'header' },
      ],
    });
    expect(fields).to.deep.equal([{ name: 'n', in: 'query', kind: 'number', required: false, integer: true }]);
  });

  it('builds the request: typed body values, the path filled and encoded, empty fields left out, bad numbers and JSON refused', () => {
    const fields = formFields(post);
    const request = buildRequest(
      '/tk/app/desk/{id}',
      fields,
      { id: 'a b', name: 'ana', count: '3', ratio: '', colour: 'blue', level: '2', loud: false, tags: '["x"]' },
      true,
    );
    expect(request.path).to.equal('/tk/app/desk/a%20b');
    expect(request.body).to.deep.equal({ name: 'ana', count: 3, colour: 'blue', level: 2, loud: false, tags: ['x'] });
    expect(request.invalid).to.deep.equal([]);
    const bad = buildRequest('/tk/app/desk/{id}', fields, { id: 'x', count: '1.5', tags: '[' }, true);
    expect(bad.invalid).to.deep.equal([
      { field: 'count', message: 'not an integer' },
      { field: 'tags', message: 'not valid JSON' },
    ]);
    const get = buildRequest(
      '/tk/app/desk/echo',
      formFields({
        parameters: [
          { name: 'n', in: 'query' },
          { name: 'on', in: 'query', schema: { type: 'boolean' } },
        ],
      }),
      { n: '7', on: true },
      false,
    );
    expect(get.query.toString()).to.equal('n=7&on=true');
    expect(get.body).to.equal(undefined);
  });

  it('gives an open payload a free field: more query parameters for a GET, a JSON body the named fields go over otherwise', () => {
    const get = formFields({ 'x-open-payload': true, parameters: [{ name: '*', in: 'path', required: true, schema: { type: 'string' } }] });
    expect(get.map((field) => [field.name, field.in, field.kind])).to.deep.equal([
      ['*', 'path', 'text'],
      ['more query parameters', 'raw', 'text'],
    ]);
    const query = buildRequest('/tk/app/rest/{*}', get, { '*': 'hosts/a b', 'more query parameters': '?rack=3&tag=x&tag=y' }, false);
    expect(query.path).to.equal('/tk/app/rest/hosts/a%20b');
    expect(query.query.toString()).to.equal('rack=3&tag=x&tag=y');
    const put = formFields({ ...post, 'x-open-payload': true });
    expect(put.at(-1)).to.deep.include({ name: 'JSON body', in: 'raw', kind: 'json' });
    const body = buildRequest('/tk/app/desk/{id}', put, { id: 'a', name: 'ana', 'JSON body': '{"name": "other", "extra": [1]}' }, true);
    expect(body.body).to.deep.equal({ name: 'ana', loud: false, extra: [1] });
    for (const text of ['[1]', '"x"', 'null', '{']) {
      expect(buildRequest('/tk/app/desk/{id}', put, { id: 'a', 'JSON body': text }, true).invalid, text).to.have.length(1);
    }
    // A WebSocket endpoint has no form to fill: no free field either.
    expect(formFields({ 'x-open-payload': true, 'x-websocket': true })).to.deep.equal([]);
    // The gateway's details of no named field go to the free field, named.
    const details = detailsByField([{ field: 'deep.key', rule: 'type', message: 'bad' }], put);
    expect(details.get('JSON body')).to.deep.equal(['deep.key: bad (type)']);
  });

  it("puts the gateway's 400 details at their fields, others apart", () => {
    const fields = formFields(post);
    const details = [
      { field: 'name', rule: 'pattern', message: 'does not match' },
      { field: 'tags.2', rule: 'type', message: 'must be a string' },
      { field: 'other', rule: 'allowed_fields', message: 'not allowed' },
    ];
    const byField = detailsByField(details, fields);
    expect(byField.get('name')).to.deep.equal(['does not match (pattern)']);
    expect(byField.get('tags')).to.deep.equal(['must be a string (type)']);
    expect(byField.get('')).to.deep.equal(['other: not allowed (allowed_fields)']);
    expect(detailsByField('nonsense', fields).size).to.equal(0);
  });
});

describe('console: Server-Sent Events', () => {
  it('parses events split anywhere, with ids, multi-line data, comments and CRLF', () => {
    const parser = new SseParser();
    const text = ': keep-alive\r\nevent: stdout\r\nid: 1\r\ndata: first\r\ndata: second\r\n\r\nevent: end\nid: 2\ndata: {"status":"succeeded"}\n\n';
    const events = [];
    for (const char of text) events.push(...parser.feed(char));
    expect(events).to.deep.equal([
      { event: 'stdout', id: '1', data: 'first\nsecond' },
      { event: 'end', id: '2', data: '{"status":"succeeded"}' },
    ]);
    expect(parser.lastEventId).to.equal('2');
    expect(new SseParser().feed('data:x\n\ndata\n\n')).to.deep.equal([
      { event: 'message', data: 'x' },
      { event: 'message', data: '' },
    ]);
  });

  it('resumes after a dropped connection with Last-Event-ID and stops at the end event', async () => {
    const asked: Array<string | undefined> = [];
    const streams = ['id: 1\nevent: stdout\ndata: one\n\nid: 2\nevent: stdout\ndata: tw', 'id: 2\nevent: stdout\ndata: two\n\nevent: end\ndata: {}\n\n'];
    const fakeFetch = (async (_url: string, init: { headers: Record<string, string> }) => {
      asked.push(init.headers['last-event-id']);
      const chunk = streams.shift()!;
      const drops = streams.length === 1;
      let sent = false;
      const body = new ReadableStream({
        pull(controller) {
          if (!sent) controller.enqueue(new TextEncoder().encode(chunk));
          else if (drops) controller.error(new Error('network dropped'));
          else controller.close();
          sent = true;
        },
      });
      return new Response(body, { status: 200 });
    }) as unknown as typeof fetch;
    const seen: string[] = [];
    let ended = false;
    await followEvents({
      url: 'http://gateway.test/runs/r/output',
      headers: { authorization: 'Bearer t' },
      signal: new AbortController().signal,
      ended: () => ended,
      onRefused: () => expect.fail('refused'),
      onEvent: (event) => {
        if (event.event === 'end') ended = true;
        else seen.push(`${event.id}:${event.data}`);
      },
      retryMs: 1,
      fetch: fakeFetch,
    });
    expect(asked).to.deep.equal([undefined, '1']);
    expect(seen).to.deep.equal(['1:one', '2:two']);
  });

  it('strips ANSI colour codes', () => {
    expect(stripAnsi('\u001b[31mred\u001b[0m and \u001b[1;32mgreen\u001b[0m')).to.equal('red and green');
  });
});

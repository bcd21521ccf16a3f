import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Database } from '@tkgate/core';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { call, toolkitClient, type Reply } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * Text input the databases cannot hold or search, refused alike on all three: a NUL character anywhere a caller
 * sends text (JSON and form bodies, the query string, a path value) is 400 naming the field, where PostgreSQL
 * answered 500; a `like` search text past 4096 characters is 400 (SQLite refused a pattern of 50,000 bytes with a
 * 500). And what a run's live output holds back for the secret mask says nothing of the secrets.
 */
async function createItems(db: Database): Promise<void> {
  await db.schema.createTable('items', (table) => {
    table.increments('id').primary();
    table.string('title', 200).notNullable();
    table.text('body').notNullable();
  });
  await db('items').insert([{ title: 'renew certs', body: 'before Friday' }]);
}

const SECRET = 'tkgate-held-secret-7f3a91c2';
const secretDir = tempDir('tkgate-text-input-');
const secretFile = path.join(secretDir, 'token');
writeFileSync(secretFile, `${SECRET}\n`);
const goDir = tempDir('tkgate-text-input-go-');
const script = scriptWriter('tkgate-text-input-bin-');
/** Prints the start of the secret (no newline), waits until the test says go, then the whole secret and a line. */
const prompts = script(
  'prompts',
  'printf "%s" "${TOKEN%-secret-*}"; while [ ! -e "$GO_DIR/$TKGATE_RUN_ID" ]; do sleep 0.05; done; printf " then %s, done\\n" "$TOKEN"',
);
const quick = script('quick', 'exit 0');

const items = {
  name: 'items',
  type: 'app',
  endpoints: [
    {
      path: 'search',
      method: ['GET', 'POST'],
      type: 'internal',
      client_filter: { allowed_content_types: ['application/json', 'application/x-www-form-urlencoded'] },
      pseudo_querys: [{ select: 'items', columns: ['id', 'title'], where: { title: { like: { contains: '$payload.q' } } } }],
    },
    { path: 'add', method: 'POST', type: 'internal', pseudo_querys: [{ insert: 'items', values: { title: '$payload.title', body: '$payload.body' } }] },
    { path: 'named/{title}', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'items', columns: ['id'], where: { title: '$path.title' } }] },
    { path: 'under/*', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'items', columns: ['id'], where: { title: '$path.*' } }] },
  ],
};
const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [
    { path: 'deploy', method: 'POST', type: 'exec', run: 'async', command: [quick], approval: { approvers: { min_power: 50 } } },
    { path: 'prompts', method: 'POST', type: 'exec', run: 'async', command: [prompts], env: { GO_DIR: goDir, TOKEN: { secret: `file:${secretFile}` } } },
  ],
};

/** A 400 invalid_payload whose details name `field` with `rule`. */
function expectRefused(reply: Reply, field: string, rule = 'nul_character'): void {
  expect(reply.status, JSON.stringify(reply.body)).to.equal(400);
  expect(reply.body.error.code).to.equal('invalid_payload');
  expect(reply.body.error.details, JSON.stringify(reply.body)).to.have.length(1);
  expect(reply.body.error.details[0], JSON.stringify(reply.body)).to.include({ field, rule });
}

for (const dialect of dialects) {
  describe(`text input the databases cannot take is refused alike (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withGateway(
      dialect,
      [
        { username: 'ann', power: 10 },
        { username: 'vic', power: 50 },
      ],
      {},
      { toolkitsDir: toolkitDir({ 'items.yaml': items, 'ops.yaml': ops }), prepare: createItems },
    );
    let ann: string;
    let vic: string;
    let client: ReturnType<typeof toolkitClient>;
    before(async () => {
      ann = await s.login('ann');
      vic = await s.login('vic');
      client = toolkitClient(s.gateway.base, ann);
    });
    const count = async () => Number((await s.bed.db('items').count({ n: '*' }).first())!.n);

    it('a NUL in a login body is 400 naming the field, with no credential and with one', async () => {
      expectRefused(await call('POST', `${s.gateway.base}/auth/login`, { body: { username: 'ann\u0000', password: 'x' } }), 'username');
      expectRefused(await call('POST', `${s.gateway.base}/auth/login`, { body: { username: 'ann', password: 'a\u0000b' } }), 'password');
      expectRefused(await call('POST', `${s.gateway.base}/auth/login`, { body: { 'user\u0000name': 'ann' } }), 'user\\u0000name');
      // The characters of the escape itself are ordinary text.
      expect((await call('POST', `${s.gateway.base}/auth/login`, { body: { username: 'ann\\u0000', password: 'x' } })).status).to.equal(401);
    });

    it("a NUL in an approval's comment is 400 naming comment, and the run still awaits its decision", async () => {
      const asked = await client.post('ops', 'deploy', {});
      expect(asked.status, JSON.stringify(asked.body)).to.equal(202);
      const id = asked.body.data.run_id as string;
      expectRefused(await call('POST', `${s.gateway.base}/runs/${id}/approve`, { token: vic, body: { comment: 'fine\u0000' } }), 'comment');
      expectRefused(await call('POST', `${s.gateway.base}/runs/${id}/reject`, { token: vic, body: { comment: '\u0000' } }), 'comment');
      const run = (await call('GET', `${s.gateway.base}/runs/${id}`, { token: vic })).body.data;
      expect(run.status).to.equal('awaiting_approval');
      expect(run.approvals).to.deep.equal([]);
      expect((await call('POST', `${s.gateway.base}/runs/${id}/reject`, { token: vic, body: { comment: 'not today' } })).status).to.equal(200);
    });

    it('a NUL in a query string is 400 naming its parameter: runs?user=, a toolkit query', async () => {
      expectRefused(await call('GET', `${s.gateway.base}/runs?user=ann%00`, { token: ann }), 'user');
      expectRefused(await call('GET', `${s.gateway.base}/runs?status=queued&user=%00`, { token: ann }), 'user');
      expectRefused(await call('GET', `${s.gateway.base}/tk/app/items/search?q=re%00new`, { token: ann }), 'q');
      expectRefused(await call('GET', `${s.gateway.base}/tk/app/items/search?q%00=x`, { token: ann }), 'q\\u0000');
      // Refused before authentication: a caller without a credential gets the same 400, not the database's error.
      expectRefused(await call('GET', `${s.gateway.base}/runs?user=%00`), 'user');
      expect((await call('GET', `${s.gateway.base}/tk/app/items/search?q=renew`, { token: ann })).body.data).to.deep.equal([{ id: 1, title: 'renew certs' }]);
    });

    it("a NUL in a toolkit call's JSON or form body is 400 naming the field, and nothing is written", async () => {
      expectRefused(await client.post('items', 'search', { q: 're\u0000' }), 'q');
      expectRefused(await client.post('items', 'add', { title: 'ok', body: 'line\u0000' }), 'body');
      expectRefused(await client.post('items', 'add', { title: 'ok', body: { nested: ['x', 'y\u0000'] } }), 'body.nested.1');
      const form = await call('POST', `${s.gateway.base}/tk/app/items/search`, {
        token: ann,
        rawBody: 'q=re%00new',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expectRefused(form, 'q');
      expect(await count()).to.equal(1);
    });

    it('a NUL in a path value is 400 naming the path, a template value or a wildcard rest', async () => {
      expectRefused(await client.get('items', 'under/a/b%00c'), 'path');
      expectRefused(await client.get('items', 'named/re%00new'), 'path');
      expectRefused(await call('GET', `${s.gateway.base}/runs/%00`, { token: ann }), 'path');
      expect((await client.get('items', 'under/renew%20certs')).body.data).to.deep.equal([{ id: 1 }]);
    });

    it('a like search text of more than 4096 characters is 400 naming the field; 4096 are searched', async () => {
      expectRefused(await client.post('items', 'search', { q: 'x'.repeat(50_001) }), 'q', 'max_length');
      expectRefused(await client.post('items', 'search', { q: '%'.repeat(4097) }), 'q', 'max_length');
      const longest = await client.post('items', 'search', { q: '%_\\'.repeat(1365) + 'x' });
      expect(longest.status, JSON.stringify(longest.body)).to.equal(200);
      expect(longest.body.data).to.deep.equal([]);
    });

    it("a run's live output shows text that begins a secret while the command waits; the secret itself is masked", async () => {
      const asked = await client.post('ops', 'prompts', {});
      expect(asked.status, JSON.stringify(asked.body)).to.equal(202);
      const id = asked.body.data.run_id as string;
      const output = async () => (await call('GET', `${s.gateway.base}/runs/${id}/output`, { token: ann })).body as string;
      // The command printed the secret's beginning and waits: the stream no longer holds it back until it goes on.
      expect(await eventually('the beginning of the secret is shown', async () => ((await output()) === 'tkgate-held' ? true : undefined))).to.equal(true);
      writeFileSync(path.join(goDir, id), '');
      await eventually('the run ends', async () => {
        const run = (await call('GET', `${s.gateway.base}/runs/${id}`, { token: ann })).body.data;
        return run.status === 'succeeded' || undefined;
      });
      expect(await output()).to.equal('tkgate-held then ***, done\n');
    });
  });
}

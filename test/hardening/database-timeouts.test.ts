import { openDatabase } from '@tkgate/core';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { holdTableLock } from '../support/db-locks.js';
import { addUsers, migrateTestDatabase, passwordOf, sleep } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { authClient, loginToken, toolkitClient, type Reply } from '../support/http.js';
import { eventually } from '../support/ops.js';
import { startPrivateMariadb, type PrivateMariadb } from '../support/private-mariadb.js';
import { withDatabase } from '../support/suite.js';
import { createToolkitTables } from '../support/tables.js';
import { toolkitDir } from '../support/toolkit-files.js';

/** db.timeout (docs/operating.md, "A database that fails or hangs"): every wait for the database is bounded, and a failure is 503 `unavailable`, never 500 or no answer. */
const toolkit = {
  name: 'db',
  type: 'app',
  endpoints: [
    { path: 'me', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'users', columns: ['id', 'username'], where: { id: '$context.user_id' } }] },
    {
      path: 'since',
      method: 'GET',
      type: 'internal',
      inject_db_context: ['users.created_at as member_since'],
      pseudo_querys: [{ select: 'items', columns: ['id'] }],
    },
    { path: 'add', method: 'POST', type: 'internal', pseudo_querys: [{ insert: 'items', values: { owner_id: '$context.user_id', title: '$payload.title' } }] },
  ],
};

/** db.timeout through its variable: a gateway without the key (older versions) starts all the same and waits without bound. */
const DB_TIMEOUT = { TKGATE_DB_TIMEOUT: '1s' };

/** The reply, or undefined when none came within a deadline far past db.timeout (a request left hanging). */
const answered = (request: Promise<Reply>) => Promise.race([request, sleep(20_000).then(() => undefined)]);

const expectUnavailable = async (request: Promise<Reply>, what: string) => {
  const reply = await answered(request);
  expect(reply, `${what}: an answer`).not.to.equal(undefined);
  expect(reply!.status, `${what}: ${JSON.stringify(reply!.body)}`).to.equal(503);
  expect(reply!.body.error.code, what).to.equal('unavailable');
  expect(Number(reply!.headers.get('retry-after')), what).to.be.at.least(1);
};

describe('a database that hangs (a private MariaDB paused with SIGSTOP)', function () {
  this.timeout(180_000);
  let mariadb: PrivateMariadb | undefined;
  let gateway: GatewayProcess | undefined;

  before(async () => {
    mariadb = await startPrivateMariadb();
    const db = openDatabase({ client: 'mysql', filename: '', url: mariadb.url });
    try {
      await migrateTestDatabase(db, { client: 'mysql', url: mariadb.url });
      await addUsers(db, [{ username: 'hana' }]);
      await createToolkitTables(db);
    } finally {
      await db.destroy();
    }
    gateway = await startGateway({
      config: {
        db: { client: 'mysql', url: mariadb.url },
        sessions: { cache_ttl: '0s' },
        toolkits: { dir: toolkitDir({ 'db.yaml': toolkit }), watch: false },
      },
      env: DB_TIMEOUT,
    });
  });
  after(async () => {
    mariadb?.resume();
    await gateway?.stop('SIGKILL');
    await mariadb?.kill();
  });

  it('answers status, toolkit calls (queries and inject_db_context), login and logout 503 unavailable while it hangs (warm pool, db.timeout 1s), and serves again once it answers', async () => {
    const auth = authClient(gateway!.base);
    const token = await loginToken(gateway!.base, 'hana', passwordOf('hana'));
    const other = await loginToken(gateway!.base, 'hana', passwordOf('hana'));
    const client = toolkitClient(gateway!.base, token);
    for (const path of ['me', 'since']) expect((await client.get('db', path)).status).to.equal(200);

    await mariadb!.pause();
    try {
      await expectUnavailable(auth.status(token), 'status');
      await expectUnavailable(client.get('db', 'me'), 'a query');
      await expectUnavailable(client.get('db', 'since'), 'inject_db_context');
      await expectUnavailable(client.post('db', 'add', { title: 'while paused' }), 'an insert');
      await expectUnavailable(auth.login('hana', passwordOf('hana')), 'login');
      await expectUnavailable(auth.logout(other), 'logout');
      expect(gateway!.output()).not.to.include('"code":"internal_error"');
    } finally {
      mariadb!.resume();
    }
    await eventually('status 200 once the database answers again', async () => ((await auth.status(token)).status === 200 ? true : undefined), 30_000);
    expect((await client.get('db', 'me')).body.data).to.deep.equal([{ id: 1, username: 'hana' }]);
  });

  it('answers status, toolkit calls, login and logout 503 unavailable with a cold pool too, with the default db.timeout (the connection handshake bounded)', async () => {
    await gateway!.stop();
    // No TKGATE_DB_TIMEOUT: the default (5s) answers well within answered()'s deadline. Version 789e830 answered
    // login 503 there (its session write failed), everything else 500 internal_error after its 10 s connectTimeout.
    gateway = await startGateway({
      config: {
        db: { client: 'mysql', url: mariadb!.url },
        sessions: { cache_ttl: '0s' },
        toolkits: { dir: toolkitDir({ 'db.yaml': toolkit }), watch: false },
      },
    });
    const auth = authClient(gateway.base);
    const token = await loginToken(gateway.base, 'hana', passwordOf('hana'));
    const other = await loginToken(gateway.base, 'hana', passwordOf('hana'));
    const client = toolkitClient(gateway.base, token);
    // The pool keeps a connection idle for knex's 30 s: cold once the gateway has closed them all.
    await eventually('the gateway closed its idle connections', async () => (await mariadb!.clientConnections()) === 0, 90_000);
    await mariadb!.pause();
    try {
      // All at once, each on a new connection: one handshake's bound, not five.
      const requests = {
        status: auth.status(token),
        'a query': client.get('db', 'me'),
        'an insert': client.post('db', 'add', { title: 'while paused' }),
        login: auth.login('hana', passwordOf('hana')),
        logout: auth.logout(other),
      };
      for (const [what, request] of Object.entries(requests)) await expectUnavailable(request, `${what} on a cold pool`);
    } finally {
      mariadb!.resume();
    }
  });
});

for (const dialect of dialects) {
  describe(`a database lock held elsewhere past db.timeout (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withDatabase(dialect, [{ username: 'ivo' }]);
    let gateway: GatewayProcess | undefined;
    before(async () => {
      await createToolkitTables(s.bed.db);
      gateway = await startGateway({
        config: { db: s.bed.dbConfig, toolkits: { dir: toolkitDir({ 'db.yaml': toolkit }), watch: false } },
        env: DB_TIMEOUT,
      });
    });
    after(async () => {
      await gateway?.stop();
    });

    it('answers a write that waits for it 503 unavailable with Retry-After, never 500, and writes once it is released', async () => {
      const client = toolkitClient(gateway!.base, await loginToken(gateway!.base, 'ivo', passwordOf('ivo')));
      const release = await holdTableLock(s.bed, 'items');
      try {
        await expectUnavailable(client.post('db', 'add', { title: 'blocked' }), 'an insert');
      } finally {
        await release();
      }
      expect((await client.post('db', 'add', { title: 'free' })).status).to.equal(200);
    });
  });
}

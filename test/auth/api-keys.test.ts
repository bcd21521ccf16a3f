import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { setDisabled } from '@tkgate/core';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { apiKeyClient, apiKeyOf, call, toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { echoEndpoint, toolkitDir } from '../support/toolkit-files.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const KEY_SHAPE = /^tkg_[A-Za-z0-9_-]{43}$/;

const notes = {
  name: 'notes',
  type: 'app',
  default_group: 'reader',
  endpoints: [echoEndpoint(), { ...echoEndpoint({ path: 'admin/echo', method: 'GET' }), permissions: { min_power: 50 } }],
};
const other = { name: 'other', type: 'app', endpoints: [echoEndpoint()] };

/** API keys (docs/api-keys.md) over HTTP: API keys made with a session, used on toolkit endpoints, status and openapi.json. */
for (const dialect of dialects) {
  describe(`API keys over HTTP (${dialect.name})`, function () {
    this.timeout(60_000);
    const s = withGateway(
      dialect,
      [
        { username: 'root', power: 100 },
        { username: 'ann', power: 10, group: 'staff' },
        { username: 'bob', power: 5 },
        { username: 'dora', power: 10 },
        { username: 'lim', power: 1 },
        { username: 'max', power: 1 },
        { username: 'eve', power: 10 },
        { username: 'fay', power: 1 },
      ],
      { sessions: { max_per_user: 2, cache_ttl: '1s' }, auth: { api_keys_per_user: 3 } },
      { toolkitsDir: toolkitDir({ 'notes.yaml': notes, 'other.yaml': other }) },
    );
    const keys = () => apiKeyClient(s.gateway.base);
    const tk = (token: string) => toolkitClient(s.gateway.base, token);
    const statusOf = async (token: string) => (await s.auth.status(token)).status;

    it('creates a key with a session (201, shown once), lists it without key material, and the key calls toolkits as its owner', async () => {
      const session = await s.login('ann');
      const created = await keys().create(session, { name: 'nightly report' });
      expect(created.status).to.equal(201);
      const { key, id, ...rest } = created.body.data;
      expect(key).to.match(KEY_SHAPE);
      expect(id).to.match(/^[0-9a-f]{16}$/);
      expect(rest).to.deep.equal({ name: 'nightly report', scope: [], expires_at: null });

      const listed = await keys().list(session);
      expect(listed.status).to.equal(200);
      const mine = listed.body.data.keys.find((entry: { id: string }) => entry.id === id);
      expect(mine).to.deep.include({ id, name: 'nightly report', user_id: s.ids.ann, username: 'ann', scope: [], expires_at: null, revoked_at: null });
      expect(JSON.stringify(listed.body)).not.to.include(key).and.not.to.include(sha256(key));

      // Steps 1-9 run as the owner: power, core group, toolkit group (the toolkit's default_group).
      const echo = await tk(key).get('notes', 'echo');
      expect(echo.status, JSON.stringify(echo.body)).to.equal(200);
      expect(echo.body.data).to.deep.include({ user_id: s.ids.ann, username: 'ann', power: 10, core_group_name: 'staff', toolkit_group: 'reader' });
      // Min power is the owner's: 10 < 50.
      const guarded = await tk(key).get('notes', 'admin/echo');
      expect(guarded.status).to.equal(403);
      expect(guarded.body.error.code).to.equal('forbidden');
      // The first use is stored (then lagged as a session's).
      await eventually('last_used_at is stored', async () => {
        const entry = (await keys().list(session)).body.data.keys.find((k: { id: string }) => k.id === id);
        return entry.last_used_at !== null;
      });
    });

    it('auth/status with a key adds kind, key_id, name and scope; a malformed or unknown key is 401', async () => {
      const session = await s.login('ann');
      const { key, id } = await apiKeyOf(s.gateway.base, session, { name: 'ci', toolkits: ['notes'], expires_in: '90d' });
      const reply = await s.auth.status(key);
      expect(reply.status).to.equal(200);
      const data = reply.body.data;
      expect(data).to.deep.include({
        active: true,
        kind: 'api_key',
        key_id: id,
        name: 'ci',
        scope: ['notes'],
        user: { id: s.ids.ann, username: 'ann', power: 10 },
      });
      expect(Date.parse(data.expires_at) - Date.parse(data.created_at)).to.equal(90 * 86_400_000);
      expect(data).to.have.property('last_used_at');
      // A session's status is as it was: no kind.
      expect((await s.auth.status(session)).body.data).not.to.have.property('kind');

      for (const bad of ['tkg_' + 'A'.repeat(42), 'tkg_' + 'A'.repeat(43), key + 'A', key.slice(4), 'TKG_' + key.slice(4)]) {
        const refused = await s.auth.status(bad);
        expect(refused.status, bad).to.equal(401);
        expect(refused.body.error.code).to.equal('unauthorized');
        expect((await tk(bad).get('notes', 'echo')).status).to.equal(401);
      }
    });

    it('a scoped key gets 403 forbidden outside its scope, and openapi.json lists only its scope', async () => {
      const session = await s.login('ann');
      const scoped = await apiKeyOf(s.gateway.base, session, { name: 'scoped', toolkits: ['notes'] });
      expect((await tk(scoped.key).get('notes', 'echo')).status).to.equal(200);
      const outside = await tk(scoped.key).get('other', 'echo');
      expect(outside.status).to.equal(403);
      expect(outside.body.error.code).to.equal('forbidden');
      expect(outside.body.error.message).to.match(/scope/);
      // The session (and an unscoped key) reach both.
      expect((await tk(session).get('other', 'echo')).status).to.equal(200);

      const pathsOf = async (token: string) => {
        const reply = await call('GET', `${s.gateway.base}/openapi.json`, { token });
        expect(reply.status).to.equal(200);
        return Object.keys(reply.body.paths);
      };
      const forKey = await pathsOf(scoped.key);
      expect(forKey).to.include('/tk/app/notes/echo').and.include('/auth/status');
      expect(forKey.filter((p) => p.startsWith('/tk/app/other'))).to.deep.equal([]);
      // A key cannot use these, so they are not described to it.
      expect(forKey).not.to.include('/auth/api-keys').and.not.to.include('/auth/logout');
      const forSession = await pathsOf(session);
      expect(forSession).to.include('/tk/app/other/echo').and.include('/auth/api-keys').and.include('/auth/api-keys/{id}');
      const unscoped = await apiKeyOf(s.gateway.base, await s.login('dora'), { name: 'all' });
      expect(await pathsOf(unscoped.key))
        .to.include('/tk/app/other/echo')
        .and.include('/tk/app/notes/echo');
    });

    it('revocation: 200 {revoked: true}, refused at once (401), listed with revoked_at; a second revoke changes nothing', async () => {
      const session = await s.login('bob');
      const { key, id } = await apiKeyOf(s.gateway.base, session);
      expect((await tk(key).get('notes', 'echo')).status).to.equal(200);
      const revoked = await keys().revoke(session, id);
      expect(revoked.status).to.equal(200);
      expect(revoked.body.data).to.deep.equal({ revoked: true });
      const refused = await tk(key).get('notes', 'echo');
      expect(refused.status).to.equal(401);
      expect(refused.body.error.code).to.equal('unauthorized');
      expect(await statusOf(key)).to.equal(401);
      const entry = (await keys().list(session)).body.data.keys.find((k: { id: string }) => k.id === id);
      expect(entry.revoked_at).to.be.a('string');
      expect((await keys().revoke(session, id)).status).to.equal(200);
      const again = (await keys().list(session)).body.data.keys.find((k: { id: string }) => k.id === id);
      expect(again.revoked_at).to.equal(entry.revoked_at);
    });

    it('an expired key is refused (401)', async () => {
      const session = await s.login('bob');
      const created = await keys().create(session, { name: 'short', expires_in: 1 });
      expect(created.status).to.equal(201);
      const { key, expires_at: expiresAt } = created.body.data;
      expect(Date.parse(expiresAt)).to.be.greaterThan(Date.now() - 5_000);
      await eventually('the key expires', async () => (await statusOf(key)) === 401);
      expect((await tk(key).get('notes', 'echo')).status).to.equal(401);
    });

    it("a key follows its owner's disabled flag: refused while disabled, accepted again once enabled", async () => {
      const { key } = await apiKeyOf(s.gateway.base, await s.login('dora'));
      expect((await tk(key).get('notes', 'echo')).status).to.equal(200);
      await setDisabled(s.bed.db, 'dora', true);
      await eventually('the disabled owner is seen', async () => (await tk(key).get('notes', 'echo')).status === 401);
      expect(await statusOf(key)).to.equal(401);
      await setDisabled(s.bed.db, 'dora', false);
      await eventually('the enabled owner is seen', async () => (await tk(key).get('notes', 'echo')).status === 200);
    });

    it('a key cannot manage sessions or keys: 403 forbidden on logout, clear-sessions and the key routes', async () => {
      const admin = await s.login('root');
      const { key, id } = await apiKeyOf(s.gateway.base, admin, { name: 'root-bot' });
      const attempts = [
        await s.auth.logout(key),
        await s.auth.clearSessions(key, { username: 'bob' }),
        await keys().create(key, { name: 'child' }),
        await keys().list(key),
        await keys().revoke(key, id),
      ];
      for (const reply of attempts) {
        expect(reply.status, JSON.stringify(reply.body)).to.equal(403);
        expect(reply.body.error.code).to.equal('forbidden');
      }
      expect(await statusOf(key)).to.equal(200);
      // A revoked key is not a credential at all there: 401.
      expect((await keys().revoke(admin, id)).status).to.equal(200);
      expect((await s.auth.logout(key)).status).to.equal(401);
    });

    it('logout and clear-sessions leave keys working; keys are not counted by sessions.max_per_user', async () => {
      const first = await s.login('max');
      const made = [await apiKeyOf(s.gateway.base, first, { name: 'a' }), await apiKeyOf(s.gateway.base, first, { name: 'b' })];
      // max_per_user is 2: two more sessions evict the first, and never a key.
      const sessions = [await s.login('max'), await s.login('max')];
      expect(await statusOf(first)).to.equal(401);
      for (const token of sessions) expect(await statusOf(token)).to.equal(200);
      for (const { key } of made) expect((await tk(key).get('notes', 'echo')).status).to.equal(200);

      expect((await s.auth.logout(sessions[0]!)).status).to.equal(200);
      const cleared = await s.auth.clearSessions(await s.login('root'), { username: 'max' });
      expect(cleared.body.data).to.deep.equal({ user_id: s.ids.max, cleared: 1 });
      expect(await statusOf(sessions[1]!)).to.equal(401);
      for (const { key } of made) {
        expect(await statusOf(key)).to.equal(200);
        expect((await tk(key).get('notes', 'echo')).status).to.equal(200);
      }
    });

    it('at most auth.api_keys_per_user live keys: 409 too_many_keys; a revoked or expired key makes room', async () => {
      const session = await s.login('lim');
      const made = [];
      for (const name of ['one', 'two']) made.push(await apiKeyOf(s.gateway.base, session, { name }));
      const brief = await apiKeyOf(s.gateway.base, session, { name: 'brief', expires_in: '1s' });
      const refused = await keys().create(session, { name: 'four' });
      expect(refused.status).to.equal(409);
      expect(refused.body.error.code).to.equal('too_many_keys');
      await eventually('the brief key expires', async () => (await statusOf(brief.key)) === 401);
      const fourth = await apiKeyOf(s.gateway.base, session, { name: 'four' });
      expect((await keys().create(session, { name: 'five' })).status).to.equal(409);
      expect((await keys().revoke(session, made[0]!.id)).status).to.equal(200);
      expect((await keys().create(session, { name: 'five' })).status).to.equal(201);
      expect(await statusOf(fourth.key)).to.equal(200);
    });

    it("another user's key is 404 key_not_found; an admin creates, lists and revokes anyone's", async () => {
      const eve = await s.login('eve');
      const bob = await s.login('bob');
      const { key, id } = await apiKeyOf(s.gateway.base, eve, { name: 'eves' });
      for (const reply of [await keys().revoke(bob, id), await keys().revoke(bob, 'ffffffffffffffff'), await keys().revoke(bob, 'not-an-id')]) {
        expect(reply.status).to.equal(404);
        expect(reply.body.error.code).to.equal('key_not_found');
      }
      expect(await statusOf(key)).to.equal(200);
      const listedByBob = (await keys().list(bob)).body.data.keys as Array<{ id: string }>;
      expect(listedByBob.map((k) => k.id)).not.to.include(id);
      for (const reply of [await keys().list(bob, 'eve'), await keys().create(bob, { name: 'x', username: 'eve' })]) {
        expect(reply.status).to.equal(403);
        expect(reply.body.error.code).to.equal('forbidden');
      }
      // Naming oneself needs no power.
      expect((await keys().list(bob, 'bob')).status).to.equal(200);

      const root = await s.login('root');
      const forEve = await keys().create(root, { name: 'by admin', username: 'eve', toolkits: ['other'] });
      expect(forEve.status).to.equal(201);
      expect((await tk(forEve.body.data.key).get('other', 'echo')).body.data.username).to.equal('eve');
      const listed = (await keys().list(root, 'eve')).body.data.keys as Array<{ id: string; username: string }>;
      expect(listed.map((k) => k.id))
        .to.include(id)
        .and.include(forEve.body.data.id);
      expect(new Set(listed.map((k) => k.username))).to.deep.equal(new Set(['eve']));
      expect((await keys().revoke(root, id)).status).to.equal(200);
      expect(await statusOf(key)).to.equal(401);
      for (const reply of [await keys().list(root, 'nobody'), await keys().create(root, { name: 'x', username: 'nobody' })]) {
        expect(reply.status).to.equal(404);
        expect(reply.body.error.code).to.equal('user_not_found');
      }
    });

    it('refuses bad bodies with 400 invalid_payload naming each field', async () => {
      const session = await s.login('bob');
      const cases: Array<[unknown, string[]]> = [
        [{}, ['name']],
        [{ name: 5 }, ['name']],
        [{ name: '' }, ['name']],
        [{ name: 'x'.repeat(65) }, ['name']],
        [{ name: 'tab\there' }, ['name']],
        [{ name: 'x', toolkits: 'notes' }, ['toolkits']],
        [{ name: 'x', toolkits: ['notes', 'Bad Name!', 7] }, ['toolkits.1', 'toolkits.2']],
        [{ name: 'x', expires_in: 'soon' }, ['expires_in']],
        [{ name: 'x', expires_in: 0 }, ['expires_in']],
        [{ name: 'x', expires_in: -5 }, ['expires_in']],
        [{ name: 'x', expires_in: '99999d' }, ['expires_in']],
        [{ name: 'x', toolkit: ['notes'] }, ['toolkit']],
        [{ name: 'x', username: 7 }, ['username']],
      ];
      for (const [body, fields] of cases) {
        const reply = await keys().create(session, body);
        expect(reply.status, JSON.stringify(body)).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_payload');
        expect(reply.body.error.details.map((problem: { field: string }) => problem.field)).to.deep.equal(fields);
      }
      for (const raw of ['[]', 'not json', '"name"']) {
        const reply = await call('POST', `${s.gateway.base}/auth/api-keys`, { token: session, rawBody: raw, headers: { 'content-type': 'application/json' } });
        expect(reply.status, raw).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_payload');
      }
      expect((await keys().list(session)).body.data.keys.filter((k: { name: string }) => k.name === 'x')).to.deep.equal([]);
    });

    it('stores only the SHA-256 of the whole key text: the key is nowhere in the database', async () => {
      const session = await s.login('fay');
      const made = [await apiKeyOf(s.gateway.base, session, { name: 'dump-a' }), await apiKeyOf(s.gateway.base, session, { name: 'dump-b' })];
      for (const { key } of made) expect((await tk(key).get('notes', 'echo')).status).to.equal(200);
      const rows = await s.bed.db('api_keys').select('*');
      const dump = JSON.stringify(rows);
      for (const { key, id } of made) {
        expect(dump).not.to.include(key).and.not.to.include(key.slice(4));
        expect(rows.find((row) => row.id === id).key_hash).to.equal(sha256(key));
      }
      if (dialect.name === 'sqlite') {
        const filename = String(s.bed.dbConfig.filename);
        const files = readdirSync(path.dirname(filename)).map((name) => path.join(path.dirname(filename), name));
        // Scanned by grep in its own process (see test/sessions/persistence.test.ts): never fs in this one.
        const count = (text: string) => {
          const grep = spawnSync('grep', ['-c', '-F', '-a', '-e', text, ...files], { encoding: 'utf8' });
          return grep.stdout
            .trim()
            .split('\n')
            .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(':') + 1) || 0), 0);
        };
        for (const { key } of made) {
          expect(count(sha256(key)), 'the hash is found: the scan reads the files').to.be.greaterThan(0);
          expect(count(key.slice(4))).to.equal(0);
        }
      }
      for (const { key } of made) expect(s.gateway.output()).not.to.include(key.slice(4));
    });
  });
}

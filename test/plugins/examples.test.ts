import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { repoRoot } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir, type ToolkitDoc } from '../support/toolkit-files.js';

const run = promisify(execFile);
const redisPlugin = path.join(repoRoot, 'examples/plugin-redis/dist/index.js');

describe('examples/plugin-template', () => {
  it('passes its own test (node --test: a real tkgate serving its endpoint)', async function () {
    this.timeout(120_000);
    const { stdout } = await run(process.execPath, ['--test', 'dist/'], { cwd: path.join(repoRoot, 'examples/plugin-template') });
    expect(stdout)
      .to.match(/^# pass 1$/m)
      .and.match(/^# fail 0$/m);
  });
});

const mine = (key: string) => [key, '$context.user_id'];
const memo: ToolkitDoc = {
  name: 'memo',
  type: 'app',
  endpoints: [
    { path: 'hits', method: 'POST', type: 'redis', operation: 'incr', key: mine('hits') },
    {
      path: 'note',
      method: 'POST',
      type: 'redis',
      operation: 'set',
      key: mine('note'),
      value_field: 'text',
      ttl: '1h',
      client_filter: { allowed_fields: ['text'], required_fields: ['text'] },
    },
    { path: 'note', method: 'GET', type: 'redis', operation: 'get', key: mine('note') },
    { path: 'items', method: 'POST', type: 'redis', operation: 'push', key: mine('items'), value_field: 'item' },
    { path: 'items', method: 'GET', type: 'redis', operation: 'range', key: mine('items'), limit: 10 },
    { path: 'wrong', method: 'POST', type: 'redis', operation: 'incr', key: mine('items') },
  ],
};

for (const dialect of dialects) {
  describe(`examples/plugin-redis against the local Redis (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'eve' }]);
    const prefix = `tkgate-test-${process.pid}-${dialect.name}:`;
    const config = (url = 'redis://127.0.0.1:6379') => ({
      db: s.bed.dbConfig,
      plugins: ['@tkgate/plugin-internal', redisPlugin],
      plugin_options: { 'tkgate-plugin-redis': { url, key_prefix: prefix, command_timeout: '1s' } },
      toolkits: { dir: toolkitDir({ 'memo.yaml': memo }), watch: false },
    });
    let gateway: GatewayProcess | undefined;
    after(async () => {
      await gateway?.stop();
      const redis = new Redis({ host: '127.0.0.1', port: 6379 });
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });

    it('reads, writes and streams keys named from the caller, with typed errors, and closes its connection at stop', async () => {
      gateway = await startGateway({ config: config() });
      const client = toolkitClient(gateway.base, await loginToken(gateway.base, 'eve', passwordOf('eve')));
      expect((await client.post('memo', 'hits')).body.data).to.deep.equal({ value: 1 });
      expect((await client.post('memo', 'hits')).body.data).to.deep.equal({ value: 2 });

      const saved = await client.post('memo', 'note', { text: 'buy milk' });
      expect(saved.status).to.equal(201);
      expect(saved.body.data).to.deep.equal({ key: `${prefix}note:${s.ids.eve}` });
      expect((await client.get('memo', 'note')).body.data).to.equal('buy milk');
      expect((await client.post('memo', 'note', {})).body.error.code).to.equal('invalid_payload');

      for (const item of ['a', 'b', 'c']) expect((await client.post('memo', 'items', { item })).status).to.equal(201);
      const streamed = await client.get('memo', 'items');
      expect(streamed.headers.get('content-type')).to.equal('application/x-ndjson');
      expect(
        String(streamed.body)
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line)),
      ).to.deep.equal([{ item: 'a' }, { item: 'b' }, { item: 'c' }]);

      const wrong = await client.post('memo', 'wrong');
      expect(wrong.status).to.equal(409);
      expect(wrong.body.error.code).to.equal('redis_wrong_type');

      expect(await gateway.stop()).to.equal(0);
      gateway = undefined;
    });

    // Neither depends on the database: the first dialect only.
    // Neither depends on the database: the first dialect only, to keep the suite lean.
    if (dialect === dialects[0]) {
      it('answers 503 redis_unavailable with Retry-After when Redis cannot be reached', async () => {
        gateway = await startGateway({ config: config('redis://127.0.0.1:1') });
        const client = toolkitClient(gateway.base, await loginToken(gateway.base, 'eve', passwordOf('eve')));
        const down = await client.post('memo', 'hits');
        expect(down.status).to.equal(503);
        expect(down.body.error.code).to.equal('redis_unavailable');
        expect(down.headers.get('retry-after')).to.equal('1');
        expect(await gateway.stop()).to.equal(0);
        gateway = undefined;
      });

      it('checks its keys at load: a set without value_field, a payload field the filter drops', async () => {
        const bad: ToolkitDoc = {
          name: 'bad',
          type: 'app',
          endpoints: [
            { path: 'a', method: 'POST', type: 'redis', operation: 'set', key: ['x'] },
            { path: 'b', method: 'POST', type: 'redis', operation: 'get', key: ['x', '$payload.id'], client_filter: { allowed_fields: ['name'] } },
          ],
        };
        const result = await runCli(['config', 'check', toolkitDir({ 'bad.yaml': bad }), '--config', writeConfig(config())]);
        expect(result.code).to.equal(1);
        const lines = result.stdout.trim().split('\n');
        expect(lines).to.have.length(2);
        expect(lines[0]).to.match(/^bad\.yaml:\d+:\d+: endpoints\.0\.value_field \(POST a\): set needs value_field: the payload field to store$/);
        expect(lines[1]).to.match(/^bad\.yaml:\d+:\d+: endpoints\.1\.key\.1 \(POST b\): payload field id is not in client_filter\.allowed_fields$/);
      });
    }
  });
}

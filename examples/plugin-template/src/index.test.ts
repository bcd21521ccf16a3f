// The plugin's own test: a real `tkgate start` (from the @tkgate/cli dev dependency) on a fresh SQLite
// file loads the built plugin and serves one `greeting` endpoint. `npm test` builds and runs it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const tkgate = path.join(path.dirname(createRequire(import.meta.url).resolve('@tkgate/cli/package.json')), 'dist/main.js');
const pluginFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'index.js');

test('tkgate serves a greeting endpoint of this plugin', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-plugin-template-'));
  const toolkits = path.join(dir, 'toolkits');
  mkdirSync(toolkits);
  writeFileSync(
    path.join(toolkits, 'hello.yaml'),
    'name: hello\ntype: app\nendpoints:\n  - path: hi\n    method: GET\n    type: greeting\n    greeting: Welcome\n',
  );
  const config = path.join(dir, 'tkgate.json');
  const plugins = ['@tkgate/plugin-internal', pluginFile];
  writeFileSync(
    config,
    JSON.stringify({ server: { port: 0 }, db: { filename: path.join(dir, 'tkgate.sqlite') }, toolkits: { dir: toolkits, watch: false }, plugins }),
  );

  const added = spawnSync(process.execPath, [tkgate, 'user', 'add', 'ada', '--password-stdin', '--config', config], {
    input: 'correct horse\n',
    encoding: 'utf8',
  });
  assert.equal(added.status, 0, added.stderr);

  const gateway = spawn(process.execPath, [tkgate, 'start', '--config', config], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let url = '';
    for await (const line of createInterface({ input: gateway.stdout })) {
      const record = JSON.parse(line);
      if (record.msg === 'listening') {
        url = record.url;
        break;
      }
    }
    assert.ok(url, 'tkgate stopped before listening');
    const login = await fetch(`${url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ada', password: 'correct horse' }),
    });
    const { data } = (await login.json()) as { data: { token: string } };
    const answer = await fetch(`${url}/tk/app/hello/hi`, { headers: { authorization: `Bearer ${data.token}` } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    assert.deepEqual(((await answer.json()) as { data: unknown }).data, { message: 'Welcome, ada!' });
  } finally {
    gateway.kill('SIGTERM');
    await once(gateway, 'exit');
  }
});

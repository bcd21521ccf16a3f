import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { writeConfig } from '../support/gateway-process.js';
import { toolkitClient } from '../support/http.js';
import { startUpstream, type Upstream } from '../support/upstream.js';
import { withGateway } from '../support/suite.js';
import { pluginsWithTestFunctions, toolkitDir, writeToolkit } from '../support/toolkit-files.js';

/**
 * A reference that cannot be opened refuses its toolkit, naming the reference and the key path, never a value:
 * at `config check`, and on reload, where the last good version stays live.
 */
const upstream: Upstream = await startUpstream(1024);
after(() => upstream.close());

const withHeader = (value: unknown) => ({
  name: 'keyed',
  type: 'app',
  endpoints: [{ path: 'call', method: 'POST', type: 'http', upstream: { url: `${upstream.url}/json`, headers: { 'X-Api-Key': value } } }],
});

describe('secret references that cannot be opened (config check)', function () {
  this.timeout(60_000);

  it('refuses each toolkit naming the reference and its key path; exec env takes references too', async () => {
    const dir = toolkitDir({
      'a.yaml': withHeader({ secret: 'env:NOT_SET_IN_ANY_TEST_RUN' }),
      'b.yaml': { ...withHeader({ secret: 'file:nowhere/key.txt' }), name: 'b' },
      'c.yaml': { ...withHeader({ secret: 'fixture:missing' }), name: 'c' },
      'd.yaml': { ...withHeader({ secret: 'nope:x' }), name: 'd' },
      'e.yaml': {
        name: 'e',
        type: 'app',
        endpoints: [{ path: 'x', method: 'POST', type: 'exec', command: ['/bin/true'], env: { K: { secret: 'env:NOT_SET_IN_ANY_TEST_RUN' } } }],
      },
      'f.yaml': { ...withHeader({ secret: 'fixture:present' }), name: 'f' },
      'g.yaml': { ...withHeader({ secret: 'env:TKGATE_DB_URL' }), name: 'g' },
    });
    const config = writeConfig({
      toolkits: { dir },
      plugins: pluginsWithTestFunctions,
      db: { client: 'sqlite', filename: path.join(dir, '..', `refs-${process.pid}.sqlite`) },
    });
    const checked = await runCli(['config', 'check', '--config', config, dir]);
    const output = checked.stdout + checked.stderr;
    expect(checked.code, output).to.not.equal(0);
    expect(output).to.include('endpoints.0.upstream.headers.X-Api-Key');
    expect(output).to.include('secret env:NOT_SET_IN_ANY_TEST_RUN: the environment variable NOT_SET_IN_ANY_TEST_RUN is not set');
    expect(output).to.include('secret file:nowhere/key.txt: the file nowhere/key.txt cannot be read (ENOENT)');
    expect(output).to.include('secret fixture:missing: scheme fixture refused it: no such fixture secret');
    expect(output).to.match(/secret nope:x: unknown scheme \(known: env, file, fixture\)/);
    expect(output).to.include('endpoints.0.env.K');
    expect(output).to.include("secret env:TKGATE_DB_URL: TKGATE_DB_URL is one of the gateway's own settings, which toolkit files cannot reference");
    expect(output).not.to.match(/f\.yaml/);
    expect(output).not.to.include('fixture-present-value');
  });
});

for (const dialect of dialects) {
  describe(`a secret file that goes away on reload [${dialect.name}]`, function () {
    this.timeout(60_000);
    const dir = toolkitDir({});
    mkdirSync(path.join(dir, 'keys'));
    writeFileSync(path.join(dir, 'keys', 'api.txt'), 'first-key-value\n');
    writeToolkit(dir, 'keyed.yaml', withHeader({ secret: 'file:keys/api.txt' }));
    const s = withGateway(dialect, [{ username: 'ann' }], {}, { toolkitsDir: dir });

    it('keeps the last good version live and logs the refusal naming the reference', async () => {
      const tk = toolkitClient(s.gateway.base, await s.login('ann'));
      expect((await tk.post('keyed', 'call', {})).status).to.equal(200);
      expect(upstream.requests.at(-1)!.headers['x-api-key']).to.equal('first-key-value');
      writeToolkit(dir, 'keyed.yaml', withHeader({ secret: 'file:keys/other.txt' }));
      const refusal = await eventually('the refusal', () =>
        s.gateway.logs.find((line) => line.msg === 'toolkit file refused' && String(line.reason).includes('file:keys/other.txt')),
      );
      expect(refusal.path).to.equal('endpoints.0.upstream.headers.X-Api-Key');
      expect((await tk.post('keyed', 'call', {})).status).to.equal(200);
      expect(upstream.requests.at(-1)!.headers['x-api-key']).to.equal('first-key-value');
      // The file that served goes away: the value read last serves until the toolkit is loaded again.
      rmSync(path.join(dir, 'keys', 'api.txt'));
      expect((await tk.post('keyed', 'call', {})).status).to.equal(200);
      expect(upstream.requests.at(-1)!.headers['x-api-key']).to.equal('first-key-value');
    });
  });
}

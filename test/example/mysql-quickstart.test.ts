import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { createTestbed, type Testbed } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { repoRoot, tempDir } from '../support/paths.js';

const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('## Quick start on MySQL or MariaDB'), readme.indexOf('## The auth API'));

const mysql = dialects.find((dialect) => dialect.name === 'mysql');
(mysql ? describe : describe.skip)("the README's MySQL/MariaDB quick start, as written, on MariaDB", () => {
  let bed: Testbed;
  let gateway: GatewayProcess | undefined;
  before(async () => (bed = await createTestbed(mysql!)));
  after(async () => {
    await gateway?.stop();
    await bed?.close();
  });

  it('creates the example table on the configured database and serves the notes toolkit from it', async () => {
    // The README's maria.json, with the URL of this test's own database in place of the README's.
    const written = /cat > maria\.json <<'EOF'\n([^]*?)\nEOF/.exec(section)?.[1];
    const config = JSON.parse(written!) as { db: { client: string; url: string } };
    expect(config.db.client).to.equal('mysql');
    config.db.url = String(bed.dbConfig.url);
    const dir = tempDir();
    const file = path.join(dir, 'maria.json');
    writeFileSync(file, JSON.stringify(config));

    // The README's commands, from the checkout (config/default.json and config/toolkits as shipped).
    for (const command of [
      'npx tkgate example setup --config maria.json',
      "echo 'correct horse' | npx tkgate user add admin --power 100 --group ops --password-stdin --config maria.json",
      'npm start -- --config maria.json',
    ]) {
      expect(section).to.include(command);
    }
    const setup = await runCli(['example', 'setup', '--config', file], { cwd: repoRoot });
    expect(setup.code, setup.stderr).to.equal(0);
    expect(setup.stdout).to.equal('created the example table notes\n');
    expect(await bed.db.schema.hasTable('notes')).to.equal(true);
    const added = await runCli(['user', 'add', 'admin', '--power', '100', '--group', 'ops', '--password-stdin', '--config', file], {
      cwd: repoRoot,
      stdin: 'correct horse\n',
    });
    expect(added.code, added.stderr).to.equal(0);

    // `npm start -- --config maria.json` runs scripts/start-example.js after the build; ports from the environment, so runs never collide.
    const script = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).scripts.start as string;
    expect(script).to.match(/node scripts\/start-example\.js$/);
    gateway = await startGateway({
      config: {},
      cwd: repoRoot,
      command: [path.join(repoRoot, 'scripts/start-example.js'), '--config', file],
      env: { TKGATE_PORT: '0', TKGATE_METRICS_PORT: '0' },
    });
    const listening = gateway.logs.find((line) => line.msg === 'listening')!;
    expect(listening).to.deep.include({ config: file, toolkits: ['notes'] });
    expect(String(listening.database)).to.match(/^mysql:\/\/root@127\.0\.0\.1:\d+\/tkgate_t/);

    const notes = toolkitClient(gateway.base, await loginToken(gateway.base, 'admin', 'correct horse'));
    const note = await notes.post('notes', 'add', { title: 'renew certs', body: 'before Friday' });
    expect(note.status, JSON.stringify(note.body)).to.equal(200);
    expect((await notes.get('notes', 'list')).body.data.map((row: { title: string }) => row.title)).to.deep.equal(['renew certs']);
    expect(await bed.db('notes').count({ n: '*' }).first()).to.deep.equal({ n: 1 });
  });
});

describe('docs/deploy/tkgate.service', () => {
  const analyzer = spawnSync('systemd-analyze', ['--version']).status === 0;
  (analyzer ? it : it.skip)('passes systemd-analyze verify (with the binary path of this checkout)', () => {
    const unit = readFileSync(path.join(repoRoot, 'docs/deploy/tkgate.service'), 'utf8');
    const copy = path.join(tempDir(), 'tkgate.service');
    writeFileSync(copy, unit.replaceAll('/usr/bin/tkgate', path.join(repoRoot, 'node_modules/.bin/tkgate')));
    expect(execFileSync('systemd-analyze', ['verify', copy], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })).to.equal('');
  });
});

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { sleep } from '../support/fixtures.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';

/**
 * The example upstream on a free port (PORT=0): the README's own one may be running on 9001 beside the tests.
 * Resolves once it listens, with its port.
 */
async function startExampleUpstream(): Promise<{ child: ChildProcessWithoutNullStreams; port: number }> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'scripts/example-upstream.js')], { env: { ...process.env, PORT: '0' } });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(/:(\d+)\s*$/.exec(chunk.toString())?.[1])));
    child.once('exit', (code) => reject(new Error(`the example upstream exited (${code}) before listening`)));
  });
  return { child, port };
}

/** config/toolkits/notes.yaml as shipped, in a directory of its own, its upstream's port 9001 replaced by `port`. */
function notesToolkitOn(port: number): string {
  const dir = tempDir('tkgate-toolkits-');
  const shipped = readFileSync(path.join(repoRoot, 'config/toolkits/notes.yaml'), 'utf8');
  writeFileSync(path.join(dir, 'notes.yaml'), shipped.replaceAll('http://127.0.0.1:9001/', `http://127.0.0.1:${port}/`));
  return dir;
}

/** The toolkit `npm start` serves, as shipped (but for its upstream's port), and the README's calls against it. */
for (const dialect of dialects) {
  describe(`the example toolkit config/toolkits/notes.yaml (${dialect.name})`, () => {
    const s = withDatabase(dialect, []);
    let gateway: GatewayProcess;
    let notes: ReturnType<typeof toolkitClient>;
    let upstream: Awaited<ReturnType<typeof startExampleUpstream>>;

    before(async () => {
      upstream = await startExampleUpstream();
      const config = writeConfig({ db: s.bed.dbConfig });
      const created = await runCli(['example', 'setup', '--config', config]);
      expect(created.code, created.stderr).to.equal(0);
      const added = await runCli(['user', 'add', 'admin', '--power', '100', '--group', 'ops', '--password-stdin', '--config', config], {
        stdin: 'correct horse\n',
      });
      expect(added.code, added.stderr).to.equal(0);
      const check = await runCli(['config', 'check', path.join(repoRoot, 'config/toolkits'), '--config', config]);
      expect(check.code, check.stdout + check.stderr).to.equal(0);
      gateway = await startGateway({ config: { db: s.bed.dbConfig, toolkits: { dir: notesToolkitOn(upstream.port), watch: false } } });
      notes = toolkitClient(gateway.base, await loginToken(gateway.base, 'admin', 'correct horse'));
    });
    after(async () => {
      upstream?.child.kill();
      await gateway?.stop();
    });

    it('answers the README calls', async () => {
      const whoami = await notes.get('notes', 'whoami');
      expect(whoami.body.data).to.have.length(1);
      expect(whoami.body.data[0]).to.include({ username: 'admin', power: 100 });
      expect(whoami.body.data[0]).not.to.have.property('password_hash');
      const added = await notes.post('notes', 'add', { title: 'renew certs', body: 'before Friday' });
      expect(added.status).to.equal(200);
      const id = added.body.data.id;
      expect((await notes.get('notes', 'list')).body.data.map((row: { title: string }) => row.title)).to.deep.equal(['renew certs']);
      expect((await notes.post('notes', 'done', { id })).body.data).to.deep.equal({ affected: 1 });
      expect((await notes.get('notes', 'by-status', { status: 'done' })).body.data).to.deep.equal([{ id, title: 'renew certs', status: 'done' }]);
      const refused = await notes.get('notes', 'by-status', { status: 'later' });
      expect(refused.status).to.equal(400);
      expect(refused.body.error.details[0]).to.include({ field: 'status', rule: 'allowed_values' });
      for (const title of ['Rotate keys', 'rotate logs', 'patch web-1']) await notes.post('notes', 'add', { title, body: '-' });
      const titles = async (query: Record<string, string>) => {
        const found = await notes.get('notes', 'search', query);
        expect(found.status, JSON.stringify(found.body)).to.equal(200);
        return [found.body.data.rows.map((row: { title: string }) => row.title), found.body.data.count];
      };
      expect(await titles({})).to.deep.equal([['patch web-1', 'rotate logs', 'Rotate keys', 'renew certs'], 4]);
      expect(await titles({ q: 'otate' })).to.deep.equal([['rotate logs', 'Rotate keys'], 2]);
      expect(await titles({ q: 'Rot' })).to.deep.equal([['Rotate keys'], 1]);
      expect(await titles({ status: 'done' })).to.deep.equal([['renew certs'], 1]);
      expect(await titles({ sort: 'title', limit: '2', offset: '1' })).to.deep.equal([['patch web-1', 'renew certs'], 4]);
      const badSort = await notes.get('notes', 'search', { sort: 'body' });
      expect(badSort.status).to.equal(400);
      expect(badSort.body.error.details[0]).to.include({ field: 'sort', rule: 'allowed_values' });
      const disk = await notes.get('notes', 'disk');
      expect(disk.status).to.equal(200);
      expect(disk.body.data.available_kb).to.be.a('number');
    });

    it('proxies hello and export to the example upstream, and answers 502 without it', async () => {
      const hello = await notes.get('notes', 'hello');
      expect(hello.status).to.equal(200);
      expect(hello.body.data).to.include({ greeting: 'Hello, admin', group: 'reader' });
      expect(hello.body.data.member_since).to.be.a('number');
      const csv = await notes.get('notes', 'export');
      expect(csv.headers.get('content-disposition')).to.equal('attachment; filename="me.csv"');
      expect(csv.body).to.equal('field,value\nusername,admin\ntoolkit_group,reader\n');
      const exited = new Promise((resolve) => upstream.child.once('exit', resolve));
      upstream.child.kill();
      await exited;
      await sleep(100);
      const down = await notes.get('notes', 'hello');
      expect(down.status).to.equal(502);
      expect(down.body.error.code).to.equal('upstream_error');
    });
  });
}

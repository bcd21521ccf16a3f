import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { writeToolkit } from '../support/toolkit-files.js';

const run = promisify(execFile);
const WORKSPACES = [
  'packages/core',
  'packages/console',
  'packages/cli',
  'plugins/plugin-internal',
  'plugins/plugin-http',
  'plugins/plugin-exec',
  'plugins/plugin-ssh',
  'examples/plugin-template',
];

/** npm as the tests' environment has it, with no prompt and no network chatter we do not need. */
const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });

async function startFrom(dir: string, config: string): Promise<{ base: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(dir, 'node_modules/.bin/tkgate'), 'start', '--config', config], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  for await (const line of createInterface({ input: child.stdout! })) {
    const record = JSON.parse(line) as Record<string, unknown>;
    if (record.msg === 'listening') return { base: String(record.url), child };
  }
  throw new Error(`tkgate exited before listening: ${stderr}`);
}

// The install uses --ignore-scripts (better-sqlite3 would compile for a minute) and so runs on MariaDB,
// which needs no native code: every @tkgate package comes from its tarball, the rest from the npm cache.
for (const dialect of dialects.filter((target) => target.name === 'mysql')) {
  describe(`packages: packed, installed from tarballs into an empty directory, served (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'dee' }]);

    it('packs every @tkgate package and the template plugin, installs them, and serves the plugin endpoint', async function () {
      this.timeout(600_000);
      const tarballs = tempDir('tkgate-tarballs-');
      // The one packing command plugin authors use (npm run pack:packages), plus the template.
      await run(process.execPath, [path.join(repoRoot, 'scripts/release/pack-packages.js'), '--out', tarballs, 'examples/plugin-template'], { cwd: repoRoot });
      const packed = readdirSync(tarballs)
        .filter((name) => name.endsWith('.tgz'))
        .sort();
      expect(packed).to.have.length(WORKSPACES.length);
      for (const workspace of WORKSPACES) {
        const manifest = JSON.parse(readFileSync(path.join(repoRoot, workspace, 'package.json'), 'utf8')) as Record<string, any>;
        // The console is a web page's files, not a module: no types, no dist/index.d.ts.
        const isModule = workspace !== 'packages/console';
        expect(manifest, workspace).to.include.keys('exports', 'engines', 'license', 'files', ...(isModule ? ['types'] : []));
        if (workspace.startsWith('plugins/') || workspace.startsWith('examples/'))
          expect(manifest.peerDependencies['@tkgate/core'], workspace).to.equal('^0.1.0');
        const { stdout } = await run('tar', [
          'tzf',
          path.join(
            tarballs,
            packed.find((name) => name.startsWith(manifest.name.replace('@', '').replace('/', '-')))!,
          ),
        ]);
        expect(stdout, workspace)
          .to.include('package/README.md')
          .and.include('package/LICENSE')
          .and.include(isModule ? `package/dist/${workspace === 'packages/cli' ? 'run' : 'index'}.d.ts` : 'package/dist/public/index.html');
      }

      const dir = tempDir('tkgate-install-');
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'gateway-host', private: true, type: 'module' }));
      await npm(['install', '--prefer-offline', '--ignore-scripts', ...packed.map((name) => path.join(tarballs, name))], dir);

      // The toolkit JSON Schema at its stable path in an installation, for editors' modelines (docs/toolkits.md).
      const installedSchema = JSON.parse(readFileSync(path.join(dir, 'node_modules/@tkgate/cli/schema/toolkit.schema.json'), 'utf8'));
      expect(installedSchema.title).to.equal('tkgate toolkit file');

      const toolkits = path.join(dir, 'toolkits');
      mkdirSync(toolkits);
      writeToolkit(toolkits, 'hello.yaml', { name: 'hello', type: 'app', endpoints: [{ path: 'hi', method: 'GET', type: 'greeting', greeting: 'Hi' }] });
      const config = path.join(dir, 'tkgate.json');
      writeFileSync(
        config,
        JSON.stringify({
          db: s.bed.dbConfig,
          server: { port: 0 },
          metrics: { port: 0 },
          toolkits: { dir: toolkits, watch: false },
          plugins: ['@tkgate/plugin-internal', 'tkgate-plugin-template'],
        }),
      );
      const { base, child } = await startFrom(dir, config);
      try {
        const client = toolkitClient(base, await loginToken(base, 'dee', passwordOf('dee')));
        const answer = await client.get('hello', 'hi');
        expect(answer.status).to.equal(200);
        expect(answer.body.data).to.deep.equal({ message: 'Hi, dee!' });
      } finally {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    });
  });
}

describe('examples/plugin-template as a plugin author copies it', () => {
  it('carries no build output: its tracked files (what git archive exports) have no dist/ and no build state, and its .gitignore keeps them out', async () => {
    const { stdout } = await run('git', ['ls-files', 'examples/plugin-template'], { cwd: repoRoot });
    const files = stdout.trim().split('\n');
    expect(files).to.include('examples/plugin-template/src/index.ts').and.include('examples/plugin-template/.gitignore');
    expect(files.filter((file) => /\/dist\/|tsbuildinfo|node_modules/.test(file))).to.deep.equal([]);
    const ignored = readFileSync(path.join(repoRoot, 'examples/plugin-template/.gitignore'), 'utf8').split('\n');
    expect(ignored).to.include.members(['dist/', '*.tsbuildinfo', 'node_modules/']);
  });
});

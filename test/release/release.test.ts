import { execFile } from 'node:child_process';
import { copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { tempDir } from '../support/paths.js';
import { exerciseInstall, runInstalled, bareEnvironment } from './installed-gateway.js';
import { releaseArtifacts, type ReleaseArtifacts } from './release-build.js';

const run = promisify(execFile);

/** Every symbolic link under `dir`, as [path relative to dir, target]. */
function linksUnder(dir: string, rel = ''): Array<[string, string]> {
  return readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((entry) => {
    const inner = path.join(rel, entry.name);
    if (entry.isSymbolicLink()) return [[inner, readlinkSync(path.join(dir, inner))] as [string, string]];
    return entry.isDirectory() ? linksUnder(dir, inner) : [];
  });
}

describe('npm run release', function () {
  this.timeout(600_000);
  let release: ReleaseArtifacts;

  before(async () => {
    release = await releaseArtifacts();
  });

  describe('the tarball, unpacked into an empty directory', () => {
    let home: string;
    before(async () => {
      const dir = tempDir('tkgate-unpacked-');
      await run('tar', ['-xzf', release.tarball, '-C', dir]);
      expect(readdirSync(dir)).to.deep.equal([`tkgate-${release.version}-linux-x64`]);
      home = path.join(dir, `tkgate-${release.version}-linux-x64`);
    });

    it('holds the Node runtime, the compiled native parts and the launcher, and no link out of itself', () => {
      for (const file of [
        'bin/tkgate',
        'node/bin/node',
        'node_modules/@tkgate/cli/dist/main.js',
        'node_modules/@tkgate/console/dist/public/index.html',
        'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
        'node_modules/@tkgate/plugin-exec/native/build/tkgate-spawn-helper',
        'share/config.example.yaml',
        'share/tkgate.service',
      ])
        expect(existsSync(path.join(home, file)), file).to.equal(true);
      expect(statSync(path.join(home, 'bin/tkgate')).mode & 0o111).to.equal(0o111);
      // A checkout's workspace links would work here and break on a server.
      expect(linksUnder(home)).to.deep.equal([]);
      expect(existsSync(path.join(home, 'node_modules/better-sqlite3/deps')), 'sqlite sources').to.equal(false);
    });

    it('runs with no node or npm on PATH: version, migrate, user add, start, a login and an exec call, SIGTERM', async () => {
      expect(readdirSync(bareEnvironment().PATH!).sort()).to.deep.equal(['readlink', 'sh']);
      await exerciseInstall(path.join(home, 'bin/tkgate'), release.version);
    });
  });

  describe('the .deb', () => {
    let root: string;
    let control: string;
    before(async () => {
      root = tempDir('tkgate-deb-root-');
      control = path.join(root, 'DEBIAN');
      await run('dpkg-deb', ['-x', release.deb, root]);
      await run('dpkg-deb', ['-e', release.deb, control]);
    });

    it('installs /usr/bin/tkgate, the unit, /etc/tkgate with its config as a conffile, all owned by root', async () => {
      expect(readlinkSync(path.join(root, 'usr/bin/tkgate'))).to.equal('../lib/tkgate/bin/tkgate');
      const unit = readFileSync(path.join(root, 'usr/lib/systemd/system/tkgate.service'), 'utf8');
      expect(unit).to.include('ExecStart=/usr/bin/tkgate start').and.include('TKGATE_CONFIG=/etc/tkgate/config.yaml').and.include('User=tkgate');
      expect(lstatSync(path.join(root, 'etc/tkgate/toolkits')).isDirectory()).to.equal(true);
      expect(readFileSync(path.join(control, 'conffiles'), 'utf8')).to.equal('/etc/tkgate/config.yaml\n');
      const fields = readFileSync(path.join(control, 'control'), 'utf8');
      expect(fields)
        .to.match(/^Package: tkgate$/m)
        .and.match(new RegExp(`^Version: ${release.version}$`, 'm'))
        .and.match(/^Architecture: amd64$/m)
        // The C and C++ runtimes the compiled parts' symbol versions name (scripts/release/glibc.js).
        .and.match(/^Depends: libc6 \(>= 2\.\d+\), libstdc\+\+6 \(>= \d+\), libgcc-s1, passwd$/m);
      const { stdout } = await run('dpkg-deb', ['-c', release.deb], { maxBuffer: 64 * 1024 * 1024 });
      const owners = new Set(
        stdout
          .trim()
          .split('\n')
          .map((line) => line.split(/\s+/)[1]),
      );
      expect([...owners]).to.deep.equal(['root/root']);
    });

    it('ships the docs and example toolkits under /usr/share/doc/tkgate; the example works on a fresh install', async () => {
      const doc = path.join(root, 'usr/share/doc/tkgate');
      for (const file of ['README.md', 'CHANGELOG.md', 'copyright', 'docs/operating.md', 'docs/configuration.md', 'docs/toolkits.md', 'docs/errors.md'])
        expect(existsSync(path.join(doc, file)), file).to.equal(true);
      for (const file of ['README.md', 'toolkit.schema.json', 'toolkits/hello.yaml', 'toolkits/notes.yaml'])
        expect(existsSync(path.join(doc, 'examples', file)), file).to.equal(true);
      const toolkits = tempDir('tkgate-example-toolkits-');
      copyFileSync(path.join(doc, 'examples/toolkits/hello.yaml'), path.join(toolkits, 'hello.yaml'));
      const env = { ...bareEnvironment(), TKGATE_DB_FILE: path.join(tempDir(), 'tkgate.sqlite'), TKGATE_TOOLKITS_DIR: toolkits };
      const tkgate = path.join(root, 'usr/bin/tkgate');
      expect((await runInstalled(tkgate, ['migrate', '--config', path.join(root, 'etc/tkgate/config.yaml')], env)).code).to.equal(0);
      const checked = await runInstalled(tkgate, ['config', 'check', '--config', path.join(root, 'etc/tkgate/config.yaml')], env);
      expect(checked.code, checked.stderr + checked.stdout).to.equal(0);
      expect(checked.stdout).to.include('toolkits: hello');
    });

    it('its tkgate runs the same way, and its example config passes config check', async () => {
      await exerciseInstall(path.join(root, 'usr/bin/tkgate'), release.version);
      const env = {
        ...bareEnvironment(),
        TKGATE_DB_FILE: path.join(root, 'var/lib/tkgate/tkgate.sqlite'),
        TKGATE_TOOLKITS_DIR: path.join(root, 'etc/tkgate/toolkits'),
      };
      const checked = await runInstalled(path.join(root, 'usr/bin/tkgate'), ['config', 'check', '--config', path.join(root, 'etc/tkgate/config.yaml')], env);
      expect(checked.code, checked.stderr + checked.stdout).to.equal(0);
    });

    /** An empty system root with a dpkg database and the user files useradd --prefix edits. */
    function emptyRoot(): string {
      const target = tempDir('tkgate-dpkg-root-');
      mkdirSync(path.join(target, 'var/lib/dpkg/info'), { recursive: true });
      mkdirSync(path.join(target, 'var/lib/dpkg/updates'));
      mkdirSync(path.join(target, 'etc/tkgate'), { recursive: true });
      writeFileSync(path.join(target, 'var/lib/dpkg/status'), '');
      writeFileSync(path.join(target, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
      writeFileSync(path.join(target, 'etc/group'), 'root:x:0:\n');
      writeFileSync(path.join(target, 'etc/shadow'), 'root:*:19000:0:99999:7:::\n');
      writeFileSync(path.join(target, 'etc/gshadow'), 'root:*::\n');
      return target;
    }

    const asRoot = process.getuid?.() === 0;
    // dpkg itself, into a temporary root: its scripts run on this host with DPKG_ROOT set (chrootless).
    (asRoot ? it : it.skip)('dpkg installs it into an empty root, keeps an edited config on reinstall, and purge removes it', async () => {
      const target = emptyRoot();
      const dpkg = (...args: string[]) => run('dpkg', [`--root=${target}`, '--force-script-chrootless', '--force-depends', '--log=/dev/null', ...args]);
      await dpkg('-i', release.deb);
      expect(readFileSync(path.join(target, 'etc/passwd'), 'utf8')).to.match(/^tkgate:x:\d+:\d+:/m);
      expect(existsSync(path.join(target, 'var/lib/tkgate'))).to.equal(true);
      const config = path.join(target, 'etc/tkgate/config.yaml');
      writeFileSync(config, `${readFileSync(config, 'utf8')}# edited by the operator\n`);
      await dpkg('-i', release.deb);
      expect(readFileSync(config, 'utf8')).to.include('# edited by the operator');
      await dpkg('--purge', 'tkgate');
      expect(existsSync(config), 'config after purge').to.equal(false);
      expect(existsSync(path.join(target, 'usr/bin/tkgate'))).to.equal(false);
      expect(existsSync(path.join(target, 'var/lib/tkgate'))).to.equal(false);
      expect(readFileSync(path.join(target, 'etc/passwd'), 'utf8')).to.not.include('tkgate:');
    });

    // useradd --prefix writes the root's own user files: root's right on the test machine (CI runs as root).
    (asRoot ? it : it.skip)('postinst makes the tkgate user and /var/lib/tkgate, twice without harm; postrm purge undoes what is empty', async () => {
      const target = emptyRoot();
      copyFileSync(path.join(root, 'etc/tkgate/config.yaml'), path.join(target, 'etc/tkgate/config.yaml'));
      const script = (name: string, ...args: string[]) => run('sh', [path.join(control, name), ...args], { env: { ...process.env, DPKG_ROOT: target } });

      await script('postinst', 'configure', '');
      await script('postinst', 'configure', release.version);
      const users = readFileSync(path.join(target, 'etc/passwd'), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('tkgate:'));
      expect(users).to.have.length(1);
      const [, , uid, gid, , home, shell] = users[0]!.split(':');
      expect([home, shell]).to.deep.equal(['/var/lib/tkgate', '/usr/sbin/nologin']);
      const state = statSync(path.join(target, 'var/lib/tkgate'));
      expect([state.uid, state.gid, state.mode & 0o777]).to.deep.equal([Number(uid), Number(gid), 0o750]);
      const config = statSync(path.join(target, 'etc/tkgate/config.yaml'));
      expect([config.uid, config.gid, config.mode & 0o777]).to.deep.equal([0, Number(gid), 0o640]);

      // A database in /var/lib/tkgate: purge keeps it and the user owning it.
      writeFileSync(path.join(target, 'var/lib/tkgate/tkgate.sqlite'), '');
      await script('postrm', 'purge');
      expect(existsSync(path.join(target, 'var/lib/tkgate/tkgate.sqlite'))).to.equal(true);
      expect(readFileSync(path.join(target, 'etc/passwd'), 'utf8')).to.include('tkgate:');
      await run('rm', [path.join(target, 'var/lib/tkgate/tkgate.sqlite')]);
      await script('postrm', 'purge');
      await script('postrm', 'purge');
      expect(existsSync(path.join(target, 'var/lib/tkgate'))).to.equal(false);
      expect(readFileSync(path.join(target, 'etc/passwd'), 'utf8')).to.not.include('tkgate:');
      await script('prerm', 'remove');
    });
  });
});

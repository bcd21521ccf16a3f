// The Debian package: the release tree under /usr/lib/tkgate, /usr/bin/tkgate linking to its launcher,
// the systemd unit, /etc/tkgate with the example config (a conffile: dpkg keeps an edited one on
// upgrade) and its toolkit directory, the docs and example toolkits under /usr/share/doc/tkgate, and the maintainer scripts in files/ that make the `tkgate` user
// and /var/lib/tkgate. Built with dpkg-deb alone: no debhelper, no root (--root-owner-group).
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runtimeDepends } from './glibc.js';

const file = (name) => new URL(`./files/${name}`, import.meta.url);

/** Installed size in KiB, as Debian's control field wants it. */
const kibOf = (dir) => Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]);

/** Builds `<outDir>/tkgate_<version>_amd64.deb` from the staged release tree; returns its path. */
export function buildDeb({ root, stage, work, outDir, version }) {
  rmSync(work, { recursive: true, force: true });
  const at = (rel) => path.join(work, rel);
  mkdirSync(at('usr/lib'), { recursive: true });
  cpSync(stage, at('usr/lib/tkgate'), { recursive: true, verbatimSymlinks: true });
  mkdirSync(at('usr/bin'), { recursive: true });
  symlinkSync('../lib/tkgate/bin/tkgate', at('usr/bin/tkgate'));
  mkdirSync(at('usr/lib/systemd/system'), { recursive: true });
  copyFileSync(path.join(root, 'docs/deploy/tkgate.service'), at('usr/lib/systemd/system/tkgate.service'));
  mkdirSync(at('etc/tkgate/toolkits'), { recursive: true });
  copyFileSync(file('config.yaml'), at('etc/tkgate/config.yaml'));
  mkdirSync(at('usr/share/doc/tkgate'), { recursive: true });
  copyFileSync(path.join(root, 'LICENSE'), at('usr/share/doc/tkgate/copyright'));
  // The documentation and example toolkits, where `dpkg -L tkgate` and Debian's conventions point.
  for (const name of ['README.md', 'CHANGELOG.md']) copyFileSync(path.join(root, name), at(`usr/share/doc/tkgate/${name}`));
  cpSync(path.join(root, 'docs'), at('usr/share/doc/tkgate/docs'), { recursive: true });
  mkdirSync(at('usr/share/doc/tkgate/examples/toolkits'), { recursive: true });
  copyFileSync(file('examples/README.md'), at('usr/share/doc/tkgate/examples/README.md'));
  copyFileSync(file('examples/hello.yaml'), at('usr/share/doc/tkgate/examples/toolkits/hello.yaml'));
  copyFileSync(path.join(root, 'config/toolkits/notes.yaml'), at('usr/share/doc/tkgate/examples/toolkits/notes.yaml'));
  copyFileSync(path.join(root, 'config/toolkit.schema.json'), at('usr/share/doc/tkgate/examples/toolkit.schema.json'));

  mkdirSync(at('DEBIAN'));
  const control = [
    'Package: tkgate',
    `Version: ${version}`,
    'Architecture: amd64',
    'Maintainer: the tkgate contributors <tkgate@users.noreply.github.com>',
    `Installed-Size: ${kibOf(work)}`,
    // The bundled Node runtime and native modules link only these; useradd comes from passwd.
    `Depends: ${[...runtimeDepends(stage).depends, 'passwd'].join(', ')}`,
    'Section: net',
    'Priority: optional',
    'Description: API gateway for internal tools: sessions and toolkit endpoints',
    ' tkgate serves login sessions and toolkit endpoints (database, HTTP and exec) from',
    ' one process. It carries its own Node.js runtime and native modules: no compiler,',
    ' npm or network is needed on the server.',
    '',
  ].join('\n');
  writeFileSync(at('DEBIAN/control'), control);
  writeFileSync(at('DEBIAN/conffiles'), '/etc/tkgate/config.yaml\n');
  for (const script of ['postinst', 'prerm', 'postrm']) {
    copyFileSync(file(script), at(`DEBIAN/${script}`));
    chmodSync(at(`DEBIAN/${script}`), 0o755);
  }
  const deb = path.join(outDir, `tkgate_${version}_amd64.deb`);
  // gzip: xz would take minutes on a 150 MB tree for a few MB less.
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', work, deb], { stdio: ['ignore', 'ignore', 'inherit'] });
  return deb;
}

import { chmodSync, chownSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/paths.js';

/** The .deb's situation: the service runs as its own user (here `nobody`), owner of the database's directory. */
const NOBODY = { uid: 65534, gid: 65534 };
const asRoot = process.getuid?.() === 0;

/** A directory everyone may read (the unprivileged gateway reads its configuration and toolkits there). */
function openDir(prefix: string): string {
  const dir = tempDir(prefix);
  chmodSync(dir, 0o755);
  return dir;
}

function ownersIn(dir: string): Record<string, number> {
  return Object.fromEntries(readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((name) => [name, statSync(path.join(dir, name)).uid]));
}

/** The service user starts the gateway on the database and alice (added before) signs in: a write. */
async function expectServiceWrites(cwd: string, config: Record<string, unknown>): Promise<void> {
  const gateway = await startGateway({ cwd, config, user: NOBODY });
  try {
    const login = await call('POST', `${gateway.base}/auth/login`, { body: { username: 'alice', password: 'alice-password' } });
    expect(login.status, JSON.stringify(login.body)).to.equal(200);
    expect(gateway.logs.some((line) => line.msg === 'the database refuses writes')).to.equal(false);
  } finally {
    expect(await gateway.stop()).to.equal(0);
  }
}

describe('a CLI command or `tkgate start` run as root keeps the SQLite database its service user owns', function () {
  this.timeout(120_000);
  before(function () {
    if (!asRoot) {
      console.log('    (skipped: these tests change file owners and need root)');
      this.skip();
    }
  });

  it("root runs `tkgate user add` on a database directory owned by the service user: every file stays that user's, and the service can write", async () => {
    const state = openDir('tkgate-state-');
    chownSync(state, NOBODY.uid, NOBODY.gid);
    // A first command creates the data directory and the file: both must be the service user's.
    const db = { client: 'sqlite', filename: path.join(state, 'data', 'tkgate.sqlite') };
    const etc = openDir('tkgate-etc-');
    const toolkits = openDir('tkgate-toolkits-');
    const config = writeConfig({ db, toolkits: { dir: toolkits, watch: false }, server: { port: 0 }, metrics: { port: 0 } }, etc);
    const added = await runCli(['user', 'add', 'alice', '--password-stdin', '--config', config], { stdin: 'alice-password\n' });
    expect(added.code, added.stderr).to.equal(0);
    const listed = await runCli(['user', 'list', '--config', config]);
    expect(listed.code, listed.stderr).to.equal(0);
    const owners = ownersIn(state);
    expect(Object.keys(owners)).to.include.members(['data', path.join('data', 'tkgate.sqlite')]);
    expect(
      Object.values(owners).every((uid) => uid === NOBODY.uid),
      JSON.stringify(owners),
    ).to.equal(true);

    await expectServiceWrites(etc, { db, toolkits: { dir: toolkits, watch: false } });
  });

  it("root runs `tkgate start` on a database directory owned by the service user: the file, -wal and -shm stay that user's, running and stopped", async () => {
    const state = openDir('tkgate-state-');
    chownSync(state, NOBODY.uid, NOBODY.gid);
    // A first start creates the file (and migrates it); a second finds it.
    const db = { client: 'sqlite', filename: path.join(state, 'tkgate.sqlite') };
    const etc = openDir('tkgate-etc-');
    const toolkits = openDir('tkgate-toolkits-');
    const config = writeConfig({ db, toolkits: { dir: toolkits, watch: false } }, etc);
    const expectOwnedByService = (when: string) => {
      const owners = ownersIn(state);
      expect(Object.keys(owners), when).to.include('tkgate.sqlite');
      expect(
        Object.entries(owners).filter(([, uid]) => uid !== NOBODY.uid),
        `${when}: files not the service user's`,
      ).to.deep.equal([]);
    };
    for (const round of ['first start', 'second start']) {
      const gateway = await startGateway({ cwd: etc, config: { db, toolkits: { dir: toolkits, watch: false } } });
      try {
        // A write of the gateway's own (a failed login is counted in the database).
        const login = await call('POST', `${gateway.base}/auth/login`, { body: { username: 'nobody-here', password: 'wrong-password' } });
        expect(login.status).to.equal(401);
        expect(Object.keys(ownersIn(state)), round).to.include.members(['tkgate.sqlite-wal', 'tkgate.sqlite-shm']);
        expectOwnedByService(`${round}, running`);
      } finally {
        expect(await gateway.stop()).to.equal(0);
      }
      expectOwnedByService(`${round}, stopped`);
    }
    // The service user can write it afterwards.
    const added = await runCli(['user', 'add', 'alice', '--password-stdin', '--config', config], { stdin: 'alice-password\n' });
    expect(added.code, added.stderr).to.equal(0);
    await expectServiceWrites(etc, { db, toolkits: { dir: toolkits, watch: false } });
  });

  it('a gateway whose SQLite file it cannot write says so at start, as an error with the cause, and /readyz names it', async () => {
    const state = openDir('tkgate-state-');
    const db = { client: 'sqlite', filename: path.join(state, 'tkgate.sqlite') };
    const etc = openDir('tkgate-etc-');
    const toolkits = openDir('tkgate-toolkits-');
    const config = writeConfig({ db, toolkits: { dir: toolkits, watch: false } }, etc);
    expect((await runCli(['migrate', '--config', config])).code).to.equal(0);
    // The trap as an older tkgate left it: the directory is the service's, the file root's.
    chownSync(state, NOBODY.uid, NOBODY.gid);
    chmodSync(db.filename, 0o644);
    const gateway = await startGateway({ cwd: etc, config: { db, toolkits: { dir: toolkits, watch: false } }, user: NOBODY });
    try {
      const refused = gateway.logs.find((line) => line.msg === 'the database refuses writes');
      expect(refused, gateway.output()).to.include({ level: 'error' });
      expect(String(refused!.reason)).to.match(/readonly/);
      expect(String(refused!.hint)).to.include(db.filename).and.include('chown');
      const ready = await call('GET', `${new URL(gateway.base).origin}/readyz`);
      expect([ready.status, ready.body.checks.database]).to.deep.equal([503, 'refuses writes']);
    } finally {
      await gateway.stop();
    }
  });
});

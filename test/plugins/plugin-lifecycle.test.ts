import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { passwordOf } from '../support/fixtures.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { tempDir, tkgateBin } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir, writeToolkit, type ToolkitDoc } from '../support/toolkit-files.js';

const probePlugin = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/probe-plugin.js');

/** Far longer than a clean exit takes on a loaded machine, far shorter than "hangs forever". */
const EXIT_DEADLINE_MS = 20_000;

function pluginFile(name: string, source: string): string {
  const file = path.join(tempDir('tkgate-plugin-'), `${name}.mjs`);
  writeFileSync(file, source);
  return file;
}

/** Holds a listening socket until its onClose runs (left open, it keeps the process alive); then writes a marker. */
function socketHolder(): { plugin: string; closed: string } {
  const closed = path.join(tempDir('tkgate-closed-'), 'closed');
  const plugin = pluginFile(
    'holder',
    `import net from 'node:net';
import { existsSync, writeFileSync } from 'node:fs';
export default {
  name: 'socket-holder',
  apiVersion: '^1.0',
  async register(api) {
    const server = net.createServer();
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    api.onClose(() => new Promise((resolve) => server.close(() => { writeFileSync(${JSON.stringify(closed)}, 'closed'); resolve(); })));
  },
};`,
  );
  return { plugin, closed };
}
const thrower = () => pluginFile('thrower', "export default { name: 'thrower', apiVersion: '^1', register() { throw new Error('no licence key'); } };");

interface Exit {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** Runs the real binary; a process still running at the deadline is killed and reported as 'hung'. */
function runWithin(args: string[]): Promise<Exit> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tkgateBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, EXIT_DEADLINE_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: hung ? 'hung' : (code ?? -1), stdout, stderr });
    });
  });
}

const fragile = (explode: boolean): ToolkitDoc => ({ name: 'fragile', type: 'app', endpoints: [{ path: 'glass', method: 'GET', type: 'fragile', explode }] });
const sturdy = (paths: string[]): ToolkitDoc => ({
  name: 'sturdy',
  type: 'app',
  endpoints: paths.map((p) => ({ path: p, method: 'GET', type: 'probe', action: 'nothing' })),
});

for (const dialect of dialects) {
  describe(`plugin lifecycle: versions, failed boots, throwing checks (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'bo' }]);
    // A broken toolkit file refuses the start here (toolkits.on_invalid_at_start: refuse), as these tests need.
    const config = (plugins: string[], toolkits: string = toolkitDir({})) =>
      writeConfig({ db: s.bed.dbConfig, plugins, toolkits: { dir: toolkits, watch: false, on_invalid_at_start: 'refuse' }, server: { port: 0 } });

    // How a boot fails does not depend on the database: these run on the first dialect only, to keep the suite lean.
    if (dialect === dialects[0]) {
      it('refuses a plugin outside its API range with one line naming both versions, also on config check', async () => {
        const future = pluginFile('future', "export default { name: 'future', apiVersion: '^2.0', register() {} };");
        const newerMinor = pluginFile('newer', "export default { name: 'newer', apiVersion: { major: 1, minor: 9 }, register() {} };");
        const cases = [
          [['start'], future, '\\^2\\.0'],
          [['config', 'check'], newerMinor, '\\{ major: 1, minor: 9 \\}'],
        ] as const;
        for (const [command, plugin, wanted] of cases) {
          const result = await runWithin([...command, '--config', config(['@tkgate/plugin-internal', plugin])]);
          expect(result.code, result.stderr).to.equal(1);
          expect(result.stderr.trim().split('\n')).to.have.length(1);
          expect(result.stderr).to.match(new RegExp(`needs plugin API ${wanted}; this tkgate has plugin API 1\\.6`));
        }
      });

      it('runs the onClose hooks of loaded plugins when a later plugin fails, so start and config check exit', async () => {
        for (const command of [['start'], ['config', 'check']]) {
          const holder = socketHolder();
          const result = await runWithin([...command, '--config', config([holder.plugin, thrower()])]);
          expect(result.code, `${command.join(' ')}: ${result.stderr}`).to.equal(1);
          expect(result.stderr).to.match(/failed to register: no licence key/);
          expect(existsSync(holder.closed), `${command.join(' ')} ran onClose`).to.equal(true);
        }
      });

      it('runs them when a toolkit file refuses the start, and after a config check', async () => {
        const broken = toolkitDir({ 'bad.yaml': { name: 'bad', type: 'app', endpoints: [{ path: 'x', method: 'GET', type: 'nope' }] } });
        const atStart = socketHolder();
        const start = await runWithin(['start', '--config', config(['@tkgate/plugin-internal', atStart.plugin], broken)]);
        expect(start.code, start.stderr).to.equal(1);
        expect(start.stderr).to.match(/unknown endpoint type nope/);
        expect(existsSync(atStart.closed)).to.equal(true);
        const atCheck = socketHolder();
        const check = await runWithin(['config', 'check', '--config', config(['@tkgate/plugin-internal', atCheck.plugin])]);
        expect(check.code, check.stderr).to.equal(0);
        expect(existsSync(atCheck.closed)).to.equal(true);
      });
    }

    it('refuses only the file whose plugin check throws, naming file, endpoint and plugin', async () => {
      const dir = toolkitDir({ 'a-fragile.yaml': fragile(true), 'b-sturdy.yaml': sturdy(['one']) });
      const result = await runWithin(['config', 'check', dir, '--config', config(['@tkgate/plugin-internal', probePlugin])]);
      expect(result.code, result.stderr).to.equal(1);
      expect(result.stdout.trim().split('\n')).to.deep.equal([
        'a-fragile.yaml:4:5: endpoints.0 (GET glass): endpoint glass: the check of plugin tkgate-test-probe (type fragile) failed unexpectedly; the endpoint is refused (cause in the log)',
      ]);
      expect(result.stderr).to.match(/tkgate config check: 1 problem\(s\) in /);
      expect(result.stderr).not.to.match(/^tkgate config check: check exploded/m);
      const cause = result.stderr
        .split('\n')
        .filter((line) => line.includes('"plugin check threw"'))
        .map((line) => JSON.parse(line));
      expect(cause).to.have.length(1);
      expect(cause[0]).to.include({ plugin: 'tkgate-test-probe', type: 'fragile', endpoint: 'glass' });
    });

    it('goes on reloading other files while one file has a throwing check', async () => {
      const dir = toolkitDir({ 'b-sturdy.yaml': sturdy(['one']) });
      const gateway = await startGateway({ config: { db: s.bed.dbConfig, plugins: ['@tkgate/plugin-internal', probePlugin], toolkits: { dir, watch: true } } });
      try {
        const client = toolkitClient(gateway.base, await loginToken(gateway.base, 'bo', passwordOf('bo')));
        writeToolkit(dir, 'a-fragile.yaml', fragile(true));
        writeToolkit(dir, 'b-sturdy.yaml', sturdy(['one', 'two']));
        const deadline = Date.now() + 15_000;
        while ((await client.get('sturdy', 'two')).status !== 200) {
          expect(Date.now(), 'sturdy.yaml reloaded').to.be.below(deadline);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect((await client.get('fragile', 'glass')).status).to.equal(404);
        const refused = gateway.logs.find((record) => record.msg === 'toolkit file refused' && record.file === 'a-fragile.yaml');
        expect(refused?.reason).to.match(/endpoint glass: the check of plugin tkgate-test-probe \(type fragile\) failed/);
        expect(gateway.logs.some((record) => record.msg === 'toolkit reload failed')).to.equal(false);
      } finally {
        await gateway.stop();
      }
    });
  });
}

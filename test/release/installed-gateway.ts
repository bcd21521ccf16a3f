import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { loginToken, toolkitClient } from '../support/http.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { writeToolkit } from '../support/toolkit-files.js';

/**
 * A PATH with only what bin/tkgate's launcher uses (sh, readlink): no node, no npm, no compiler. /usr/bin
 * on this machine has node, so PATH=/usr/bin:/bin would not prove the release carries its own.
 */
export function bareEnvironment(): NodeJS.ProcessEnv {
  const bin = tempDir('tkgate-bare-path-');
  for (const tool of ['sh', 'readlink']) {
    const found = ['/usr/bin', '/bin'].map((dir) => path.join(dir, tool)).find(existsSync);
    if (!found) throw new Error(`no ${tool} in /usr/bin or /bin`);
    symlinkSync(found, path.join(bin, tool));
  }
  return { PATH: bin, HOME: tempDir('tkgate-home-'), LANG: 'C.UTF-8' };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runInstalled(bin: string, args: string[], env: NodeJS.ProcessEnv, stdin = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** `tkgate migrate` on an empty database, then the user ops (password ops-password-1), through `cli`. */
export async function migrateWithUser(cli: (args: string[], stdin?: string) => Promise<Run>): Promise<void> {
  const migrated = await cli(['migrate']);
  expect(migrated.code, migrated.stderr).to.equal(0);
  expect(migrated.stdout).to.match(/^applied: 001_initial/);
  const added = await cli(['user', 'add', 'ops', '--password-stdin'], 'ops-password-1\n');
  expect(added.code, added.stderr).to.equal(0);
}

/**
 * What an operator does first with an installed tkgate, through `bin` (a launcher, or a link to it) in
 * a bare environment: version, migrate, user add, start on SQLite, a login and an exec toolkit call
 * through the native spawn helper, then SIGTERM and exit 0. The start-up line names the version.
 */
export async function exerciseInstall(bin: string, version: string): Promise<void> {
  const env = bareEnvironment();
  const dir = tempDir('tkgate-installed-');
  const toolkits = path.join(dir, 'toolkits');
  mkdirSync(toolkits);
  writeToolkit(toolkits, 'ops.yaml', {
    name: 'ops',
    type: 'app',
    endpoints: [{ path: 'hello', method: 'GET', type: 'exec', command: 'printf \'{"context":%s}\' "$1"' }],
  });
  const config = path.join(dir, 'tkgate.json');
  writeFileSync(
    config,
    JSON.stringify({
      server: { port: 0 },
      metrics: { port: 0 },
      db: { client: 'sqlite', filename: path.join(dir, 'data/tkgate.sqlite') },
      toolkits: { dir: toolkits, watch: false },
      // "native": a release without the compiled helper must fail here rather than fall back.
      plugin_options: { '@tkgate/plugin-exec': { spawner: 'native' } },
    }),
  );
  const cli = (args: string[], stdin?: string) => runInstalled(bin, [...args, '--config', config], env, stdin);

  const shown = await runInstalled(bin, ['--version'], env);
  expect(shown.stdout, shown.stderr).to.equal(`tkgate ${version}\n`);
  await migrateWithUser(cli);
  // The toolkit schema installed with the CLI (copied from config/toolkit.schema.json when packed) is what `tkgate schema` prints.
  const printed = await cli(['schema']);
  expect(printed.code, printed.stderr).to.equal(0);
  const home = path.dirname(path.dirname(realpathSync(bin)));
  const shipped = JSON.parse(readFileSync(path.join(home, 'node_modules/@tkgate/cli/schema/toolkit.schema.json'), 'utf8')) as unknown;
  expect(JSON.parse(printed.stdout)).to.deep.equal(shipped);
  expect(shipped).to.deep.equal(JSON.parse(readFileSync(path.join(repoRoot, 'config/toolkit.schema.json'), 'utf8')));

  const child = spawn(bin, ['start', '--config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    let base = '';
    let started: Record<string, unknown> | undefined;
    for await (const line of createInterface({ input: child.stdout })) {
      const record = JSON.parse(line) as Record<string, unknown>;
      if (record.msg === 'starting') started = record;
      if (record.msg === 'listening') {
        base = String(record.url);
        child.stdout.resume();
        break;
      }
    }
    expect(base, `tkgate exited before listening: ${stderr}`).to.not.equal('');
    expect(started?.version).to.equal(version);
    const answer = await toolkitClient(base, await loginToken(base, 'ops', 'ops-password-1')).get('ops', 'hello');
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(JSON.stringify(answer.body.data.context)).to.include('"ops"');
    // The web console ships in the release (docs/console.md).
    const page = await fetch(`${base}/console/`);
    expect(page.status).to.equal(200);
    expect(await page.text()).to.match(/<script type="module" src="\.\/app-[A-Z0-9]{8}\.js">/);
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited, stderr).to.equal(0);
}

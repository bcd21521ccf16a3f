import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const exec = (pathName: string, method: string | string[], extra: Record<string, unknown> = {}) => ({
  path: pathName,
  method,
  type: 'exec',
  command: ['/bin/cat'],
  ...extra,
});
const tools = {
  name: 'tools',
  type: 'app',
  endpoints: [
    // server.max_body_bytes (1 MiB) applies: a body over 128 KiB cannot be one argument.
    exec('unbounded', 'POST'),
    exec('bounded', 'POST', { client_filter: { max_body_bytes: 100_000 } }),
    exec('too-loose', ['GET', 'POST'], { client_filter: { max_body_bytes: 200_000 } }),
    exec('on-stdin', 'POST', { stdin: true }),
    exec('query-only', 'GET'),
  ],
};

/** Programs the machine may not have: by name on PATH (the gateway's, or the endpoint's env.PATH). */
const programs = {
  name: 'programs',
  type: 'app',
  endpoints: [
    exec('on-path', 'GET', { command: ['cat'] }),
    exec('missing', 'GET', { command: ['tkgate-no-such-tool'] }),
    exec('own-path', 'GET', { command: ['cat'], env: { PATH: '/nonexistent-dir' } }),
    exec('secret-path', 'GET', { command: ['tkgate-no-such-tool'], env: { PATH: { secret: 'env:HOME' } } }),
    exec('shell', 'GET', { command: 'cat' }),
  ],
};

// config check reads the database schema only: one dialect is enough.
describe(`tkgate config check on exec endpoints (${dialects[0]!.name})`, () => {
  const s = withDatabase(dialects[0]!, []);

  it('warns, without refusing the file, when an exec endpoint accepts bodies its command cannot take as an argument', async () => {
    const config = writeConfig({ db: s.bed.dbConfig });
    const result = await runCli(['config', 'check', toolkitDir({ 'tools.yaml': tools }), '--config', config]);
    expect(result.code, result.stdout + result.stderr).to.equal(0);
    const lines = result.stdout.trim().split('\n');
    const warnings = lines.filter((line) => line.includes(': warning: '));
    expect(warnings.map((line) => line.split(': warning: ')[0])).to.deep.equal(['tools.yaml: endpoint.unbounded', 'tools.yaml: endpoint.too-loose']);
    expect(warnings[0]).to.include('accepts bodies of up to 1048576 bytes');
    expect(warnings[0]).to.include('413 context_too_large');
    expect(warnings[0]).to.include('client_filter.max_body_bytes to at most 126975');
    expect(warnings[1]).to.include('accepts bodies of up to 200000 bytes');
    expect(lines.at(-1)).to.equal('1 file(s), toolkits: tools: OK');
  });

  it('warns when a program given by name is not on the PATH its command gets (a secret PATH is not judged)', async () => {
    const config = writeConfig({ db: s.bed.dbConfig });
    const result = await runCli(['config', 'check', toolkitDir({ 'programs.yaml': programs }), '--config', config]);
    expect(result.code, result.stdout + result.stderr).to.equal(0);
    const warnings = result.stdout.split('\n').filter((line) => line.includes(': warning: '));
    expect(warnings).to.deep.equal([
      `programs.yaml: endpoint.missing.command.0: warning: tkgate-no-such-tool is not found on PATH (${process.env.PATH}): calls will fail with 500 exec_failed (spawn_failed); install it (for the container image: a derived image) or give its path`,
      'programs.yaml: endpoint.own-path.command.0: warning: cat is not found on PATH (/nonexistent-dir): calls will fail with 500 exec_failed (spawn_failed); install it (for the container image: a derived image) or give its path',
    ]);
  });
});

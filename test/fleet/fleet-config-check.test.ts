import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';

/** Each bad key on its own line, so a problem's line:column says which. */
const toolkit = `name: fleet
type: app
endpoints:
  - path: a/{service}
    method: POST
    type: ssh
    run: sync
    nodes: { match: { role: web } }
    command: [systemctl, restart, $path.service]
    ssh: { key: { secret: "env:HOME" } }
  - path: b
    method: POST
    type: ssh
    nodes: { match: { role: web } }
    command: [systemctl, restart, $path.service]
    ssh: { key: { secret: "env:HOME" } }
  - path: c
    method: POST
    type: ssh
    max_failures: "200%"
    nodes: { match: { role: web } }
    command: [uptime]
    ssh: { key: { secret: "env:HOME" }, certificate: { ca_key: "x", principals: [deploy] } }
`;

// config check reads the database schema only: one dialect is enough.
describe(`tkgate config check on ssh endpoints and the fleet inventory (${dialects[0]!.name})`, () => {
  const s = withDatabase(dialects[0]!, []);

  it('refuses every bad key of an ssh endpoint at its file:line:column, naming the key', async () => {
    const dir = tempDir('tkgate-fleet-check-');
    writeFileSync(path.join(dir, 'fleet.yaml'), toolkit);
    const result = await runCli(['config', 'check', dir, '--config', writeConfig({ db: s.bed.dbConfig })]);
    expect(result.code, result.stdout + result.stderr).to.equal(1);
    const out = result.stdout + result.stderr;
    expect(out).to.match(/fleet\.yaml:7:\d+: .*run.*ssh endpoints always run as runs/);
    expect(out).to.match(/fleet\.yaml:15:\d+: .*\$path\.service: the endpoint's path has no \{service\}/);
    expect(out).to.match(/fleet\.yaml:20:\d+: .*max_failures.*a percentage from 0% to 100%/);
    expect(out).to.match(/fleet\.yaml:23:\d+: .*give ssh\.key or ssh\.certificate/);
  });

  it('refuses a bad fleet.inventory at start with its key path', async () => {
    const result = await runCli(['config', 'check', tempDir(), '--config', writeConfig({ db: s.bed.dbConfig, fleet: { inventory: [{ url: 'ftp://x' }] } })]);
    expect(result.code).not.to.equal(0);
    expect(result.stderr).to.include('fleet.inventory');
  });
});

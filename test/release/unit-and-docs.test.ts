import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadServerConfig } from '@tkgate/core';
import { repoRoot } from '../support/paths.js';

/** Settings of a systemd unit that set the no-new-privileges flag for a service with User= (seccomp filters), and the flag itself. */
const NO_NEW_PRIVILEGES = [
  'NoNewPrivileges',
  'RestrictSUIDSGID',
  'LockPersonality',
  'PrivateDevices',
  'ProtectKernelTunables',
  'ProtectKernelModules',
  'ProtectKernelLogs',
  'ProtectClock',
  'SystemCallFilter',
  'SystemCallArchitectures',
  'RestrictAddressFamilies',
  'RestrictNamespaces',
  'RestrictRealtime',
  'MemoryDenyWriteExecute',
];

const settingsOf = (text: string): Map<string, string> =>
  new Map(
    text
      .split('\n')
      .map((line) => /^\s*([A-Za-z]+)=(.*)$/.exec(line))
      .filter((match) => match !== null)
      .map((match) => [match[1]!, match[2]!.trim()]),
  );

describe("docs/operating.md's recipe for commands under another user fits the shipped unit", () => {
  it('a recipe that uses sudo comes with a drop-in turning off every setting of the unit that forbids it', () => {
    const unit = settingsOf(readFileSync(path.join(repoRoot, 'docs/deploy/tkgate.service'), 'utf8'));
    const operating = readFileSync(path.join(repoRoot, 'docs/operating.md'), 'utf8');
    const forbidding = NO_NEW_PRIVILEGES.filter((name) => unit.has(name) && !['false', 'no', '0', ''].includes(unit.get(name)!.toLowerCase()));
    expect(forbidding).to.include('NoNewPrivileges');
    if (!operating.includes('"sudo"')) return;
    const dropIn = [...operating.matchAll(/```ini\n([\s\S]*?)```/g)].map((match) => settingsOf(match[1]!)).find((settings) => settings.has('NoNewPrivileges'));
    expect(dropIn, 'a drop-in next to the sudo recipe').not.to.equal(undefined);
    for (const name of forbidding) expect(dropIn!.get(name), name).to.equal('false');
    expect(dropIn!.get('AmbientCapabilities')).to.equal('CAP_KILL');
  });
});

describe('the shipped systemd unit', () => {
  it("gives a stop with the shipped configuration's settings the time it takes, so draining runs end as documented", () => {
    const unit = settingsOf(readFileSync(path.join(repoRoot, 'docs/deploy/tkgate.service'), 'utf8'));
    const config = loadServerConfig({ cwd: repoRoot, env: {} });
    // A stop (packages/core/src/gateway.ts): shutdown_delay, then the runs' drain_timeout and cancel_grace, then up to
    // 10 s for in-flight requests. Cut short, systemd's SIGKILL ends the draining runs lost, not gateway_stopped.
    const stopMs = config.server.shutdown_delay_ms + config.runs.drain_timeout_ms + config.runs.cancel_grace_ms + 10_000;
    expect(Number(unit.get('TimeoutStopSec')) * 1000).to.be.greaterThan(stopMs);
  });
});

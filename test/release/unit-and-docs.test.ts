import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
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

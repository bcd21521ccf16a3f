import { createLogger, describeProblem, fleetSettingsOf } from '@tkgate/core';
import { fleetListing, Inventory, type NodeListing } from '@tkgate/plugin-ssh/engine';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { configFrom } from './context.js';

const LABEL = /^([A-Za-z_][A-Za-z0-9_.-]*)=(.*)$/s;

/** One node as a line of the table: name, address, user, labels, where its host keys come from, its source. */
function line(node: NodeListing): string {
  const labels =
    Object.entries(node.labels)
      .map(([key, value]) => `${key}=${value}`)
      .join(',') || '-';
  const keys = node.host_keys_from === 'none' ? 'no host key' : `${node.host_keys.length} key(s) from ${node.host_keys_from}`;
  return [node.name, `${node.host}:${node.port}`, node.user ?? '-', labels, keys, node.source].join('  ');
}

export const fleetNodes: Command = {
  name: 'fleet nodes',
  usage: 'fleet nodes [--label k=v]... [--json]',
  summary: "list the inventory's nodes (fleet.inventory), read from its sources here; host keys by fingerprint, never key material",
  options: { label: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const labels: Record<string, string> = {};
    const given = (values as Record<string, unknown>).label;
    for (const text of Array.isArray(given) ? (given as string[]) : typeof given === 'string' ? [given] : []) {
      const match = LABEL.exec(text);
      if (!match) throw new UsageError(`--label ${text}: give it as key=value`);
      labels[match[1]!] = match[2]!;
    }
    const config = configFrom(values);
    const settings = fleetSettingsOf(config);
    const log = createLogger('error', (text) => process.stderr.write(text + '\n'));
    const inventory = new Inventory({
      sources: settings.inventory,
      ...(settings.knownHosts ? { knownHosts: settings.knownHosts } : {}),
      baseDir: process.cwd(),
      log,
    });
    let failed = false;
    try {
      for (const report of await inventory.load()) {
        if (report.unreadable) process.stderr.write(`${report.source}: cannot be read: ${report.unreadable}\n`);
        for (const problem of report.problems) process.stderr.write(`${describeProblem(problem)}\n`);
        failed ||= report.unreadable !== undefined || report.problems.length > 0;
      }
      for (const node of fleetListing(inventory.nodes, labels)) process.stdout.write((values.json === true ? JSON.stringify(node) : line(node)) + '\n');
    } finally {
      await inventory.close();
    }
    return failed ? 1 : undefined;
  },
};

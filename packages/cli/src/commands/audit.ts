import { GatewayError, parseAuditFilters, queryAuditEvents, type AuditListing } from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { withDatabase } from './context.js';

/** One event as a line of the table: time, action, who, where, result. */
function line(event: AuditListing): string {
  const who = event.username ?? (event.actor_user_id === null ? '-' : `#${event.actor_user_id}`);
  const where = event.toolkit ? `${event.toolkit}/${event.endpoint ?? ''}${event.method ? ` ${event.method}` : ''}` : '-';
  const result = `${event.status ?? '-'} ${event.code ?? '-'}`;
  const took = event.duration_ms === null ? '-' : `${event.duration_ms}ms`;
  const details = event.details ? ` ${JSON.stringify(event.details)}` : '';
  return [event.at, event.action, `${event.actor}:${who}`, event.client ?? '-', where, result, took].join('  ') + details;
}

export const audit: Command = {
  name: 'audit',
  usage: 'audit [--user U] [--toolkit T] [--action A] [--since 1h] [--until T] [--limit N] [--json]',
  summary: 'show the audit trail, newest first (--json: one JSON object per line)',
  options: {
    user: { type: 'string' },
    toolkit: { type: 'string' },
    action: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const text = Object.fromEntries(
      (['user', 'toolkit', 'action', 'since', 'until', 'limit'] as const).flatMap((name) => (typeof values[name] === 'string' ? [[name, values[name]]] : [])),
    );
    let filters;
    try {
      filters = parseAuditFilters(text);
    } catch (err) {
      const problems = err instanceof GatewayError ? (err.details as Array<{ field: string; message: string }>) : [];
      throw new UsageError(problems.map((problem) => `--${problem.message}`).join('; ') || (err as Error).message);
    }
    const { events } = await withDatabase(values, (db) => queryAuditEvents(db, filters));
    for (const event of events) process.stdout.write((values.json === true ? JSON.stringify(event) : line(event)) + '\n');
  },
};

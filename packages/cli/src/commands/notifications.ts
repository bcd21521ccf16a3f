import { DELIVERY_STATUSES, listDeliveries, redeliver, type DeliveryListing } from '@tkgate/core';
import { UsageError } from '../cli-error.js';
import type { Command } from './command.js';
import { withDatabase } from './context.js';

const LIST_LIMIT = 200;

/** One delivery as a line: id, status, event, sink, attempts and the last attempt's outcome. */
function line(delivery: DeliveryListing): string {
  const last = delivery.attempts.at(-1);
  const outcome = last ? (last.error ?? String(last.status_code)) : '-';
  return [delivery.id, delivery.status.padEnd(9), delivery.event.padEnd(21), delivery.sink, `${delivery.attempts.length} attempt(s)`, outcome].join('  ');
}

export const notificationsList: Command = {
  name: 'notifications list',
  usage: 'notifications list [--status S] [--json]',
  summary: 'list notification deliveries, newest first, with their attempts (--json: one JSON object per line)',
  options: { status: { type: 'string' }, json: { type: 'boolean' } },
  operands: { min: 0, max: 0 },
  async run({ values }) {
    const status = typeof values.status === 'string' ? values.status : undefined;
    if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status))
      throw new UsageError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    const { deliveries } = await withDatabase(values, (db) => listDeliveries(db, { status, limit: String(LIST_LIMIT) }));
    for (const delivery of deliveries) process.stdout.write((values.json === true ? JSON.stringify(delivery) : line(delivery)) + '\n');
  },
};

export const notificationsRedeliver: Command = {
  name: 'notifications redeliver',
  usage: 'notifications redeliver ID',
  summary: 'deliver a notification again (the same event and webhook-id); a running gateway sends it within a second',
  options: {},
  operands: { min: 1, max: 1 },
  async run({ values, operands: [id] }) {
    const delivery = await withDatabase(values, (db) => redeliver(db, id!));
    if (!delivery) throw new Error(`no notification delivery ${id}`);
    process.stdout.write(`delivery ${id}: pending\n`);
  },
};

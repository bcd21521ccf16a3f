import type { Database } from '../db/connect.js';
import { NotificationStore, parseDeliveryFilters, type DeliveryListing } from './notification-store.js';

/** The delivery log's page for these filters (query-string values): what the route answers and the CLI prints. */
export async function listDeliveries(db: Database, query: Record<string, unknown>): Promise<{ deliveries: DeliveryListing[]; next_cursor: string | null }> {
  return new NotificationStore(db).list(parseDeliveryFilters(query));
}

/** Makes a delivery due again now (the same event and `webhook-id`); undefined when there is no such delivery. */
export async function redeliver(db: Database, id: string): Promise<DeliveryListing | undefined> {
  const store = new NotificationStore(db);
  if (!(await store.redeliver(id, Date.now()))) return undefined;
  return store.get(id);
}

import type { Database } from '../db/connect.js';
import { parseDuration } from '../config/duration.js';
import { invalidPayload, type FieldProblem } from '../errors.js';

/** What `tkgate audit` and GET {base}/admin/audit filter by; every filter is optional. */
export interface AuditFilters {
  /** The acting user's name (actor_user_id). */
  user?: string;
  toolkit?: string;
  action?: string;
  /** Epoch milliseconds, inclusive. */
  since?: number;
  /** Epoch milliseconds, exclusive. */
  until?: number;
  limit: number;
  /** Events older than this one (the `next_cursor` of the page before). */
  cursor?: number;
}

/** One event as the CLI and the admin route show it. */
export interface AuditListing {
  id: number;
  at: string;
  request_id: string | null;
  actor_user_id: number | null;
  /** The acting user's name now (null when there is none, or the user is gone). */
  username: string | null;
  actor: string;
  credential: string | null;
  client: string | null;
  action: string;
  toolkit: string | null;
  endpoint: string | null;
  method: string | null;
  status: number | null;
  code: string | null;
  duration_ms: number | null;
  details: Record<string, unknown> | null;
}

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** The raw query parameters or options, as text; undefined when not given. */
export type AuditFilterText = Partial<Record<'user' | 'toolkit' | 'action' | 'since' | 'until' | 'limit' | 'cursor', string>>;

const NAME = /^[\x21-\x7e]{1,255}$/;

/**
 * A time: an ISO-8601 date or time (`2026-11-24`, `2026-11-24T16:00:00Z`), or a duration back from now (`1h`,
 * `90m`, `7d`, as in the configuration). Undefined when it is neither.
 */
function parseTime(text: string, now: number): number | undefined {
  try {
    return now - parseDuration(text);
  } catch {
    if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return undefined;
    const at = Date.parse(text);
    return Number.isNaN(at) ? undefined : at;
  }
}

/** Reads the filters' text; every problem is one 400 invalid_payload whose details name the field. */
export function parseAuditFilters(text: AuditFilterText, now = Date.now()): AuditFilters {
  const problems: FieldProblem[] = [];
  const filters: AuditFilters = { limit: DEFAULT_LIMIT };
  for (const field of ['user', 'toolkit', 'action'] as const) {
    const value = text[field];
    if (value === undefined || value === '') continue;
    if (!NAME.test(value)) problems.push({ field, rule: 'format', message: `${field} must be 1 to 255 printable characters without spaces` });
    else filters[field] = value;
  }
  for (const field of ['since', 'until'] as const) {
    const value = text[field];
    if (value === undefined || value === '') continue;
    const at = parseTime(value, now);
    if (at === undefined) problems.push({ field, rule: 'time', message: `${field} must be a duration back from now (1h, 7d) or an ISO-8601 time` });
    else filters[field] = at;
  }
  if (text.limit !== undefined && text.limit !== '') {
    const limit = /^\d{1,6}$/.test(text.limit) ? Number(text.limit) : NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) problems.push({ field: 'limit', rule: 'range', message: `limit must be a whole number from 1 to ${MAX_LIMIT}` });
    else filters.limit = limit;
  }
  if (text.cursor !== undefined && text.cursor !== '') {
    if (!/^[1-9]\d{0,17}$/.test(text.cursor)) problems.push({ field: 'cursor', rule: 'format', message: 'cursor must be a next_cursor of an earlier page' });
    else filters.cursor = Number(text.cursor);
  }
  if (problems.length > 0) throw invalidPayload(problems, 'invalid audit query');
  return filters;
}

/** A row as the database gives it: ids and times may come as strings (BIGINT), details as JSON text. */
interface AuditRecord extends Omit<AuditListing, 'id' | 'at' | 'details'> {
  id: number | string;
  at: number | string;
  details: string | null;
}

function listing(row: AuditRecord): AuditListing {
  return {
    id: Number(row.id),
    at: new Date(Number(row.at)).toISOString(),
    request_id: row.request_id,
    actor_user_id: row.actor_user_id === null ? null : Number(row.actor_user_id),
    username: row.username ?? null,
    actor: row.actor,
    credential: row.credential,
    client: row.client,
    action: row.action,
    toolkit: row.toolkit,
    endpoint: row.endpoint,
    method: row.method,
    status: row.status === null ? null : Number(row.status),
    code: row.code,
    duration_ms: row.duration_ms === null ? null : Number(row.duration_ms),
    details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
  };
}

/**
 * A page of events matching the filters, newest first (by id: the order they were written in), and the cursor
 * of the next page (null when this one is the last). An unknown user matches nothing.
 */
export async function queryAuditEvents(db: Database, filters: AuditFilters): Promise<{ events: AuditListing[]; next_cursor: string | null }> {
  const query = db('audit_events as e')
    .leftJoin('users as u', 'u.id', 'e.actor_user_id')
    .select('e.*', 'u.username as username')
    .orderBy('e.id', 'desc')
    .limit(filters.limit + 1);
  if (filters.user !== undefined) {
    const user = await db('users').where({ username: filters.user }).first('id', 'username');
    // Byte for byte, whatever the column's collation.
    query.where('e.actor_user_id', user && user.username === filters.user ? Number(user.id) : -1);
  }
  if (filters.toolkit !== undefined) query.where('e.toolkit', filters.toolkit);
  if (filters.action !== undefined) query.where('e.action', filters.action);
  if (filters.since !== undefined) query.where('e.at', '>=', filters.since);
  if (filters.until !== undefined) query.where('e.at', '<', filters.until);
  if (filters.cursor !== undefined) query.where('e.id', '<', filters.cursor);
  const rows = (await query) as AuditRecord[];
  const more = rows.length > filters.limit;
  const events = rows.slice(0, filters.limit).map(listing);
  return { events, next_cursor: more ? String(events.at(-1)!.id) : null };
}

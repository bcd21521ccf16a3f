/**
 * One event of the audit trail (docs/audit.md): who (actor, user, credential, address) did what (action, and for a
 * toolkit call its toolkit, endpoint and method), when, and with what result (status, code, duration). `details`
 * holds only what the action's recorder chose: never a token, password, key, header value or unlisted payload field.
 */
export type AuditActor = 'session' | 'api_key' | 'jwt' | 'trigger' | 'cli' | 'oidc' | 'system' | 'schedule';

export interface AuditEvent {
  /** Epoch milliseconds; now when absent. */
  at?: number;
  requestId?: string | null;
  actorUserId?: number | null;
  actor: AuditActor;
  /** The first 8 hex of the session's or key's hash, or the key's id. */
  credential?: string | null;
  client?: string | null;
  /** `login`, `logout`, `call`, `user_add`...: docs/audit.md lists them. */
  action: string;
  toolkit?: string | null;
  /** The endpoint's path inside its toolkit, as the toolkit file writes it. */
  endpoint?: string | null;
  method?: string | null;
  status?: number | null;
  /** The error code, or `ok`. */
  code?: string | null;
  durationMs?: number | null;
  details?: Record<string, unknown> | null;
}

/** What a call's event is completed with once its endpoint has answered. */
export interface AuditOutcome {
  status: number;
  code: string;
  durationMs: number;
  details?: Record<string, unknown> | null;
}

/**
 * Column widths of `audit_events` (006_audit_events.ts): a longer value is cut rather than refused, as MariaDB's
 * strict mode would refuse it (an X-Forwarded-For entry behind server.trust_proxy is whatever the proxy wrote).
 */
const cut = (value: string | null | undefined, width: number): string | null => (value === undefined || value === null ? null : value.slice(0, width));

/** The row of `audit_events` an event is written as. */
export function auditRow(event: AuditEvent): Record<string, unknown> {
  return {
    at: event.at ?? Date.now(),
    request_id: cut(event.requestId, 128),
    actor_user_id: event.actorUserId ?? null,
    actor: event.actor,
    credential: cut(event.credential, 64),
    client: cut(event.client, 64),
    action: event.action,
    toolkit: cut(event.toolkit, 64),
    endpoint: cut(event.endpoint, 255),
    method: event.method ?? null,
    status: event.status ?? null,
    code: event.code ?? null,
    duration_ms: event.durationMs === undefined || event.durationMs === null ? null : Math.round(event.durationMs),
    details: detailsText(event.details),
  };
}

export const detailsText = (details: Record<string, unknown> | null | undefined): string | null =>
  details && Object.keys(details).length > 0 ? JSON.stringify(details) : null;

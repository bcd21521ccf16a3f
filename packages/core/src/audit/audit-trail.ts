import type { Database } from '../db/connect.js';
import { insertReturningId } from '../db/inserted-id.js';
import { describeDatabaseError } from '../db/database-errors.js';
import type { Logger } from '../log.js';
import { auditRow, detailsText, type AuditEvent, type AuditOutcome } from './audit-event.js';

/** Where a failed write is told: the error line and tkgate_audit_write_failures_total. */
export interface AuditFailureSink {
  log: Logger;
  /** Counts one failed write. */
  failed(): void;
}

/** Writes an event as a row of `audit_events`; resolves to its id. Throws what the database threw. */
export async function writeAuditEvent(db: Database, event: AuditEvent): Promise<number> {
  const id = await insertReturningId(db, 'audit_events', auditRow(event));
  return Number(id);
}

/**
 * The gateway's side of the audit trail: `write` (the caller decides what a failure means: audit.required),
 * `complete` a call's row once it has answered, and `record` an event whose failure must never change the answer.
 * Every failure is logged (error) and counted.
 */
export class AuditTrail {
  constructor(
    private readonly db: Database,
    private readonly sink: AuditFailureSink,
  ) {}

  write(event: AuditEvent): Promise<number> {
    return writeAuditEvent(this.db, event);
  }

  /** Logs and counts a write that failed: the event's action and where, never its details. */
  failed(err: unknown, event: Pick<AuditEvent, 'action' | 'requestId' | 'toolkit' | 'endpoint'>): void {
    this.sink.failed();
    this.sink.log.error('audit event not written', {
      action: event.action,
      request_id: event.requestId ?? undefined,
      toolkit: event.toolkit ?? undefined,
      endpoint: event.endpoint ?? undefined,
      ...describeDatabaseError(err),
    });
  }

  /** Writes an event; a failure is logged and counted, never thrown. */
  async record(event: AuditEvent): Promise<void> {
    try {
      await this.write(event);
    } catch (err) {
      this.failed(err, event);
    }
  }

  /** Completes a call's row (written before its endpoint ran); a failure is logged and counted, never thrown. */
  async complete(id: number, outcome: AuditOutcome, event: Pick<AuditEvent, 'action' | 'requestId' | 'toolkit' | 'endpoint'>): Promise<void> {
    try {
      const changes: Record<string, unknown> = { status: outcome.status, code: outcome.code, duration_ms: Math.round(outcome.durationMs) };
      if (outcome.details !== undefined) changes.details = detailsText(outcome.details);
      await this.db('audit_events').where('id', id).update(changes);
    } catch (err) {
      this.failed(err, event);
    }
  }
}

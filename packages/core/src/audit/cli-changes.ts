import { userInfo } from 'node:os';
import type { Database } from '../db/connect.js';
import type { AuditEvent } from './audit-event.js';
import { writeAuditEvent } from './audit-trail.js';

/** The operating-system account that ran the command, when the system can tell. */
function osUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}

/**
 * Records a change a `tkgate` command made (`user_add`, `user_passwd`, `group_assoc`, `sessions_clear`...), once it
 * is made: actor `cli`, code `ok`, the command's operands in details plus the OS account that ran it. Never a
 * password. A failed write fails the command (its change stays made; the message says so).
 */
export async function recordCliChange(db: Database, action: string, details: Record<string, unknown>): Promise<void> {
  const who = osUser();
  try {
    await writeAuditEvent(db, { actor: 'cli', action, code: 'ok', details: who === undefined ? details : { ...details, os_user: who } });
  } catch (err) {
    throw new Error(`the change was made, but its audit event was not written: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * An audit trail for a command's own events as shared code records them (runs/run-commands.ts): each a CLI change,
 * with the event's toolkit and endpoint among its details.
 */
export function cliAuditTrail(db: Database): { record(event: AuditEvent): Promise<void> } {
  return {
    record: (event) =>
      recordCliChange(db, event.action, {
        ...event.details,
        ...(event.toolkit != null && { toolkit: event.toolkit }),
        ...(event.endpoint != null && { endpoint: event.endpoint }),
      }),
  };
}

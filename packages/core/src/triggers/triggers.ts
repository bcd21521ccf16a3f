import type { IncomingHttpHeaders } from 'node:http';
import type { Database } from '../db/connect.js';
import type { Secrets } from '../secrets/secrets.js';
import type { SessionCache } from '../sessions/session-cache.js';
import type { CallerRecord, UserDirectory } from '../users/user-directory.js';
import { valueAt } from './json-paths.js';
import type { CompiledTrigger } from './trigger-config.js';
import { TriggerDeliveries } from './trigger-deliveries.js';
import { SCHEMES } from './trigger-schemes.js';

/**
 * Signed triggers (docs/triggers.md), what the pipeline's trigger stage asks of them, in its order: the signature
 * on the raw body (`verify`), the provider's delivery id (`deliveryOf`), `when` (`matches`), the payload
 * (`payloadOf`), the `as` user (`callerOf`), and the deliveries seen (`deliveries`).
 */
export class Triggers {
  readonly deliveries: TriggerDeliveries;

  constructor(
    db: Database,
    private readonly secrets: Secrets,
    private readonly users: UserDirectory,
    /** The `as` users, read as an API key's owner is (trusted as long as a session read). */
    private readonly callers: SessionCache<CallerRecord>,
  ) {
    this.deliveries = new TriggerDeliveries(db);
  }

  /** undefined when the signature holds; else why not (for the log only). */
  async verify(trigger: CompiledTrigger, raw: Buffer, headers: IncomingHttpHeaders, nowMs = Date.now()): Promise<string | undefined> {
    const secret = this.secrets.value(trigger.secret);
    return SCHEMES[trigger.scheme].verify(secret, raw, headers, { nowMs, ...(trigger.hmac && { hmac: trigger.hmac }) });
  }

  deliveryOf(trigger: CompiledTrigger, headers: IncomingHttpHeaders, body: unknown): string | undefined {
    return SCHEMES[trigger.scheme].delivery(headers, body);
  }

  /** Whether every `when` entry holds: each header and body value exactly as written. */
  matches(trigger: CompiledTrigger, headers: IncomingHttpHeaders, body: unknown): boolean {
    for (const [name, value] of trigger.whenHeaders) if (headers[name] !== value) return false;
    for (const [path, value] of trigger.whenPayload) if (valueAt(body, path) !== value) return false;
    return true;
  }

  /** The payload `payload_map` builds from the body (a path that is missing leaves its field out), else the body itself. */
  payloadOf(trigger: CompiledTrigger, body: Record<string, unknown>): Record<string, unknown> {
    if (!trigger.payloadMap) return body;
    const payload: Record<string, unknown> = Object.create(null);
    for (const [field, path] of trigger.payloadMap) {
      const value = valueAt(body, path);
      if (value !== undefined) payload[field] = value;
    }
    return payload;
  }

  callerOf(username: string, now = Date.now()): Promise<CallerRecord | undefined> {
    return this.callers.through(username, now, () => this.users.findByUsername(username));
  }
}

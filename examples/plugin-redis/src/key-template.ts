import type { ConfigIssue, RequestContext } from '@tkgate/core';

/**
 * A key is written as parts joined by ':', each a literal or a reference to the request:
 * `[notes, $context.user_id]` is `notes:42` for user 42. References are values, never parsed as
 * commands: Redis takes every argument as bytes, so no request value can change what runs.
 */
export type KeyPart = { literal: string } | { from: 'payload' | 'context'; field: string };

const REFERENCE = /^\$(payload|context)\.([A-Za-z_][A-Za-z0-9_]*)$/;

export function parseKey(parts: readonly string[]): KeyPart[] {
  return parts.map((part) => {
    const match = REFERENCE.exec(part);
    return match ? { from: match[1] as 'payload' | 'context', field: match[2]! } : { literal: part };
  });
}

/** At load: every reference must be able to arrive (a payload field the client filter lets through, a context field the wrapping keeps). */
export function checkKey(parts: KeyPart[], env: { contextFields: ReadonlySet<string>; payloadFields: ReadonlySet<string> | undefined }): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  parts.forEach((part, index) => {
    if ('literal' in part) return;
    if (part.from === 'context' && !env.contextFields.has(part.field)) {
      issues.push({ path: ['key', index], message: `the request context has no field ${part.field}` });
    }
    if (part.from === 'payload' && env.payloadFields && !env.payloadFields.has(part.field)) {
      issues.push({ path: ['key', index], message: `payload field ${part.field} is not in client_filter.allowed_fields` });
    }
  });
  return issues;
}

/** The key for one request, or the name of the payload field that is missing. */
export function buildKey(prefix: string, parts: KeyPart[], context: RequestContext): { key: string } | { missing: string } {
  const values: string[] = [];
  for (const part of parts) {
    if ('literal' in part) {
      values.push(part.literal);
      continue;
    }
    const source = part.from === 'payload' ? ((context.payload as Record<string, unknown> | undefined) ?? {}) : context;
    const value = source[part.field];
    if (typeof value !== 'string' && typeof value !== 'number') return { missing: `${part.from === 'payload' ? '' : 'context.'}${part.field}` };
    values.push(String(value));
  }
  return { key: prefix + values.join(':') };
}

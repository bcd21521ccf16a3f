import type { ConfigIssue, RequestContext } from '../plugins/plugin-api.js';

/**
 * overwrite_wrapping, applied in order to the request context:
 *   -<field>  removes a top-level field
 *   <name>    moves db_context.<name> to the top level
 */
export type WrappingRule = { remove: string } | { promote: string };

export const CONTEXT_FIELDS = [
  'user_id',
  'username',
  'power',
  'core_group_id',
  'core_group_name',
  'toolkit_group',
  'request_id',
  'payload',
  'db_context',
] as const;
/** Context fields that are objects in every call. */
const OBJECT_CONTEXT_FIELDS: ReadonlySet<string> = new Set(['payload', 'db_context']);
/** Whether a reference (`$context.payload`) names a context field that is an object in every call: no concurrency key. */
export const namesObjectField = (reference: string): boolean =>
  reference.startsWith('$context.') && OBJECT_CONTEXT_FIELDS.has(reference.slice('$context.'.length));
/** Fields a promoted db_context value may never replace. */
const PROTECTED_FIELDS = new Set(['user_id', 'username', 'core_group_id', 'request_id', 'payload', 'db_context']);

export interface CompiledWrapping {
  rules: WrappingRule[];
  /** Top-level context fields after the rules. */
  contextFields: Set<string>;
  /** db_context keys after the rules. */
  dbContextKeys: Set<string>;
}

export function compileWrapping(entries: string[] | undefined, dbContextKeys: string[], issues: ConfigIssue[], at: Array<string | number>): CompiledWrapping {
  const contextFields = new Set<string>(CONTEXT_FIELDS);
  const remaining = new Set(dbContextKeys);
  const rules: WrappingRule[] = [];
  for (const [index, entry] of (entries ?? []).entries()) {
    const path = [...at, index];
    if (entry.startsWith('-')) {
      const field = entry.slice(1);
      if (!contextFields.has(field)) {
        issues.push({ path, message: `cannot remove ${field}: the context has no such field (it has ${[...contextFields].join(', ')})` });
        continue;
      }
      contextFields.delete(field);
      rules.push({ remove: field });
      continue;
    }
    if (!contextFields.has('db_context')) {
      issues.push({ path, message: `cannot promote ${entry}: db_context was removed by an earlier entry` });
    } else if (PROTECTED_FIELDS.has(entry)) {
      issues.push({ path, message: `${entry} may not be replaced by a db_context value` });
    } else if (!remaining.has(entry)) {
      issues.push({ path, message: `db_context has no key ${entry} to promote (inject_db_context gives: ${dbContextKeys.join(', ') || 'nothing'})` });
    } else {
      remaining.delete(entry);
      contextFields.add(entry);
      rules.push({ promote: entry });
    }
  }
  return { rules, contextFields, dbContextKeys: remaining };
}

export function applyWrapping(context: RequestContext, rules: readonly WrappingRule[]): RequestContext {
  if (rules.length === 0) return context;
  const wrapped: RequestContext = { ...context, db_context: { ...(context.db_context as Record<string, unknown>) } };
  for (const rule of rules) {
    if ('remove' in rule) {
      delete wrapped[rule.remove];
    } else {
      const dbContext = wrapped.db_context as Record<string, unknown>;
      wrapped[rule.promote] = dbContext[rule.promote];
      delete dbContext[rule.promote];
    }
  }
  return wrapped;
}

import type { ConfigIssue } from '../plugins/plugin-api.js';
import type { ColumnType } from '../db/column-types.js';
import { unreadable, type DatabaseSchema } from '../db/database-schema.js';

/**
 * inject_db_context entries, parsed and checked against the live schema at load:
 *   <table>.<column>                                   the caller's row (users by id, other tables by user_id)
 *   <table>.<column>?<filter_column>=$payload.<field>  every matching row's value, as an array
 *   <table>.<column>?<filter_column>=$path.<name>      the same, by a path parameter (path-templates.ts)
 * either optionally followed by ` as <key>`.
 */
export interface DbContextEntry {
  key: string;
  table: string;
  column: string;
  /** The column that identifies the caller's row (simple form). */
  ownerColumn?: 'id' | 'user_id';
  /** The payload value is converted to the filter column's type before it is bound (see column-types.ts). */
  /** `payloadField` is the path parameter's name when the source is `path`. */
  filter?: { column: string; payloadField: string; type: ColumnType; source: 'payload' | 'path' };
}

const NAME = '[A-Za-z_][A-Za-z0-9_]*';
export const ENTRY = new RegExp(`^(${NAME})\\.(${NAME})(?:\\?(${NAME})=\\$(payload|path)\\.(${NAME}|\\*))?(?:\\s+as\\s+(${NAME}))?$`);

export function compileDbContext(
  entries: string[] | undefined,
  schema: DatabaseSchema,
  payloadFields: ReadonlySet<string> | undefined,
  pathParams: ReadonlySet<string>,
  issues: ConfigIssue[],
  at: Array<string | number>,
): DbContextEntry[] {
  const compiled: DbContextEntry[] = [];
  const keys = new Map<string, number>();
  for (const [index, source] of (entries ?? []).entries()) {
    const path = [...at, index];
    const match = ENTRY.exec(source.trim());
    if (!match) {
      issues.push({
        path,
        message: 'must be "<table>.<column>" or "<table>.<column>?<filter_column>=$payload.<field>" (or $path.<name>), optionally with " as <key>"',
      });
      continue;
    }
    const [, table, column, filterColumn, from, payloadField, alias] = match as unknown as [string, string, string, string?, string?, string?, string?];
    const origin = from as 'payload' | 'path' | undefined;
    const entry: DbContextEntry = { key: alias ?? column, table, column };
    const problem =
      unreadable(schema, table, column) ??
      (filterColumn ? unreadable(schema, table, filterColumn) : undefined) ??
      (filterColumn ? undefined : ownerProblem(schema, table, entry));
    if (problem) issues.push({ path, message: problem });
    if (filterColumn && payloadField && origin) {
      entry.filter = { column: filterColumn, payloadField, source: origin, type: schema.columnType(table, filterColumn) };
      if (origin === 'payload' && payloadField === '*') issues.push({ path, message: '$payload.* is not a field: name one' });
      else if (origin === 'path') {
        if (!pathParams.has(payloadField)) issues.push({ path, message: `$path.${payloadField} is not a parameter of the endpoint's path` });
      } else if (payloadFields && !payloadFields.has(payloadField)) {
        issues.push({ path, message: `$payload.${payloadField} is not in client_filter.allowed_fields, so it would always be absent` });
      }
    }
    const earlier = keys.get(entry.key);
    if (earlier !== undefined) issues.push({ path, message: `db_context key ${entry.key} is already set by entry ${earlier}; rename one with "as <key>"` });
    keys.set(entry.key, index);
    compiled.push(entry);
  }
  return compiled;
}

function ownerProblem(schema: DatabaseSchema, table: string, entry: DbContextEntry): string | undefined {
  if (table === 'users') {
    entry.ownerColumn = 'id';
    return undefined;
  }
  entry.ownerColumn = 'user_id';
  return schema.hasColumn(table, 'user_id') ? undefined : `the simple form reads the caller's row by user_id, and table ${table} has no user_id column`;
}

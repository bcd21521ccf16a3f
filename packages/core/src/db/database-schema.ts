import { dialectOf, type Database } from './connect.js';
import { nearest } from '../suggest.js';
import { COLUMN_TYPES, type ColumnKind, type ColumnType } from './column-types.js';

/**
 * Tables and columns of the live database, with each column's type. Configuration names tables and columns
 * only through this: a name that is not here is a config error, so no unknown identifier ever reaches a query.
 */
export class DatabaseSchema {
  constructor(
    private readonly tables: ReadonlyMap<string, ReadonlyMap<string, ColumnKind>>,
    /** PostgreSQL: each table's serial or identity column, which an insert returns as the new row's id. */
    private readonly generated: ReadonlyMap<string, string> = new Map(),
  ) {}

  /** The column whose value the database generates for a new row (PostgreSQL only; see db/inserted-id.ts). */
  generatedColumn(table: string): string | undefined {
    return this.generated.get(table);
  }

  hasTable(table: string): boolean {
    return this.tables.has(table);
  }

  hasColumn(table: string, column: string): boolean {
    return this.tables.get(table)?.has(column) ?? false;
  }

  tableNames(): string[] {
    return [...this.tables.keys()];
  }

  columnsOf(table: string): string[] {
    return [...(this.tables.get(table)?.keys() ?? [])];
  }

  /** How request values are compared with and stored into the column (see column-types.ts). */
  columnType(table: string, column: string): ColumnType {
    return COLUMN_TYPES[this.tables.get(table)?.get(column) ?? 'any'];
  }

  /** Equal for equal schemas: toolkit files compiled against one schema need not be compiled again. */
  fingerprint(): string {
    return JSON.stringify([...this.tables].map(([table, columns]) => [table, [...columns].sort()]).sort());
  }
}

/** Never readable or writable through toolkit configuration. */
export const SECRET_TABLES = new Set([
  'sessions',
  'api_keys',
  'login_failures',
  'audit_events',
  'toolkit_versions',
  'runs',
  'run_output',
  'trigger_deliveries',
  'run_nodes',
  'tkgate_migrations',
  'tkgate_migrations_lock',
]);
export const SECRET_COLUMNS = new Set(['users.password_hash']);
/** Tables tkgate keeps its own books in (plugins' migration records): secret like the above. */
const BOOKKEEPING_PREFIX = 'tkgate_';
/** tkgate's own tables: readable (minus secrets) but never written through configuration. */
export const CORE_TABLES = new Set(['users', 'core_groups', 'jde_associations', 'toolkit_overrides', ...SECRET_TABLES]);

const secretTable = (table: string): boolean => SECRET_TABLES.has(table) || table.startsWith(BOOKKEEPING_PREFIX);

/** A misspelt table or column name's nearest existing one, as a parenthesis for the message. */
function didYouMean(typed: string, names: string[]): string {
  const guess = nearest(typed, names);
  return guess ? ` (did you mean ${guess}?)` : '';
}

/** Why a table/column may not be read through configuration, or undefined when it may. */
export function unreadable(schema: DatabaseSchema, table: string, column?: string): string | undefined {
  if (secretTable(table)) return `table ${table} can never be read through configuration`;
  if (!schema.hasTable(table))
    return `table ${table} does not exist in the database${didYouMean(
      table,
      schema.tableNames().filter((name) => !secretTable(name)),
    )}`;
  if (column === undefined) return undefined;
  if (SECRET_COLUMNS.has(`${table}.${column}`)) return `${table}.${column} can never be read through configuration`;
  if (!schema.hasColumn(table, column)) return `column ${table}.${column} does not exist${didYouMean(column, schema.columnsOf(table))}`;
  return undefined;
}

export async function readDatabaseSchema(db: Database): Promise<DatabaseSchema> {
  const tables = new Map<string, Map<string, ColumnKind>>();
  const add = (table: string, column: string, kind: ColumnKind) => {
    if (!tables.has(table)) tables.set(table, new Map());
    tables.get(table)!.set(column, kind);
  };
  const generated = new Map<string, string>();
  for (const { table, column, kind, generated: isGenerated } of await dialectOf(db).readColumns(db)) {
    add(table, column, kind);
    if (isGenerated && !generated.has(table)) generated.set(table, column);
  }
  return new DatabaseSchema(tables, generated);
}

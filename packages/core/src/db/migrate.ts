import type { Knex } from 'knex';
import { dialectOf, type Database } from './connect.js';
import * as initial from './migrations/001_initial.js';
import * as sharedAuthority from './migrations/002_shared_authority.js';
import * as readiness from './migrations/003_readiness.js';
import * as oidc from './migrations/004_oidc.js';
import * as apiKeys from './migrations/005_api_keys.js';
import * as auditEvents from './migrations/006_audit_events.js';
import * as rateLimits from './migrations/007_rate_limits.js';
import * as toolkitVersions from './migrations/008_toolkit_versions.js';
import * as runs from './migrations/009_runs.js';
import * as runApprovals from './migrations/010_run_approvals.js';
import * as runNodes from './migrations/012_run_nodes.js';
import * as runClaims from './migrations/013_run_claims.js';
import * as schedules from './migrations/014_schedules.js';
import * as notifications from './migrations/015_notifications.js';
import * as triggerDeliveries from './migrations/016_trigger_deliveries.js';
import * as runOutputBytes from './migrations/017_run_output_bytes.js';

/** Migrations are compiled in, not globbed from disk, so the installed binary carries them. */
const migrations: Record<string, Knex.Migration> = {
  '001_initial': initial,
  '002_shared_authority': sharedAuthority,
  '003_readiness': readiness,
  '004_oidc': oidc,
  '005_api_keys': apiKeys,
  '006_audit_events': auditEvents,
  '007_rate_limits': rateLimits,
  '008_toolkit_versions': toolkitVersions,
  '009_runs': runs,
  '010_run_approvals': runApprovals,
  '012_run_nodes': runNodes,
  '013_run_claims': runClaims,
  '014_schedules': schedules,
  '015_notifications': notifications,
  '016_trigger_deliveries': triggerDeliveries,
  '017_run_output_bytes': runOutputBytes,
};

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

/**
 * knex refuses a record naming a migration it does not have ("the migration directory is corrupt"). Ours
 * are compiled in, so such a name was written by a newer tkgate: after a downgrade, the older version
 * runs on the newer, additive schema (docs/upgrading.md), and `migrate --status` lists the name.
 */
export const TOLERATE_NEWER_MIGRATIONS = { disableMigrationsListValidation: true } as const;

/** Brings the schema up to date; returns the names of the migrations it ran. */
export async function migrateToLatest(db: Database): Promise<string[]> {
  const config = { migrationSource: source, tableName: 'tkgate_migrations', ...TOLERATE_NEWER_MIGRATIONS };
  // Several gateways (or workers) start at once: only take knex's migration lock when there is work.
  const [, pending] = (await db.migrate.list(config)) as [unknown[], unknown[]];
  if (pending.length === 0) return [];
  const [, applied] = (await db.migrate.latest(config)) as [number, string[]];
  return applied;
}

/** One set of migrations and the table knex records it in: core's, or one plugin's. */
export interface MigrationSet {
  /** "" for core; a plugin's name, which prefixes its migrations' names as "<plugin>/<migration>". */
  owner: string;
  table: string;
  migrations: Readonly<Record<string, { up(db: Knex): PromiseLike<unknown> }>>;
}

/** Core's own migrations, the first set of `migrate --status` and `--dry-run` (plugins' follow: plugins/plugin-migrations.ts). */
export const CORE_MIGRATIONS: MigrationSet = { owner: '', table: 'tkgate_migrations', migrations };

const qualified = (set: MigrationSet, name: string) => (set.owner ? `${set.owner}/${name}` : name);

/** The names a migrations table records, read without creating it (knex's own list() would). */
async function recordedIn(db: Database, table: string): Promise<string[]> {
  if (!(await db.schema.hasTable(table))) return [];
  return ((await db(table).select('name')) as Array<{ name: string }>).map((row) => row.name);
}

export interface MigrationState {
  /** "001_initial", or "<plugin>/<migration>". */
  name: string;
  /** `recorded-only`: in the database's record but unknown to this version (written by a newer one). */
  state: 'applied' | 'pending' | 'recorded-only';
}

/** `tkgate migrate --status`: every migration of the sets (core's, then the plugins'), and whether it ran. Changes nothing. */
export async function migrationStates(db: Database, sets: readonly MigrationSet[]): Promise<MigrationState[]> {
  const states: MigrationState[] = [];
  for (const set of sets) {
    const recorded = new Set(await recordedIn(db, set.table));
    const known = Object.keys(set.migrations).sort();
    for (const name of known) states.push({ name: qualified(set, name), state: recorded.has(name) ? 'applied' : 'pending' });
    for (const name of [...recorded].filter((name) => !known.includes(name)).sort()) states.push({ name: qualified(set, name), state: 'recorded-only' });
  }
  return states;
}

/** Statements a dry run reads for real: they change nothing, and migrations decide by their answers. */
const READ_ONLY = /^\s*(select|show|describe|explain|pragma\s+[\w.]+\s*(\([^)]*\))?\s*;?\s*$)/i;
const TRANSACTION_CONTROL = /^\s*(begin|start transaction|savepoint|release savepoint|rollback|commit)\b/i;

export interface PlannedMigration {
  name: string;
  /** The statements that change the database, bindings filled in, in the order they would run. */
  statements: string[];
}

type QueryObject = { sql: string; bindings?: unknown[]; response?: unknown };
type RawClient = Knex.Client & { _query(connection: unknown, obj: QueryObject): Promise<QueryObject>; _escapeBinding(value: unknown): string };

/**
 * `tkgate migrate --dry-run`: the pending migrations' statements, found by running them in one
 * transaction that is rolled back. SQLite and PostgreSQL run every statement (their DDL is transactional,
 * so the rollback undoes all; later migrations see earlier ones' tables: exact). MySQL commits DDL at once,
 * so there only reads run and writes are recorded with an empty answer: exact unless a migration reads
 * what an earlier pending one would have written.
 */
export async function plannedMigrations(db: Database, sets: readonly MigrationSet[]): Promise<PlannedMigration[]> {
  const trx = await db.transaction();
  const client = trx.client as RawClient;
  const dialect = dialectOf(db);
  const runsWrites = dialect.transactionalDdl;
  const execute = client._query.bind(client);
  let current: string[] = [];
  const fillIn = ({ sql, bindings = [] }: QueryObject) =>
    dialect.withBindings(sql, (index, mark) => (index < bindings.length ? client._escapeBinding(bindings[index]) : mark));
  client._query = async (connection, obj) => {
    if (READ_ONLY.test(obj.sql) || TRANSACTION_CONTROL.test(obj.sql)) return execute(connection, obj);
    current.push(fillIn(obj));
    if (runsWrites) return execute(connection, obj);
    obj.response = [[], []];
    return obj;
  };
  const plan: PlannedMigration[] = [];
  try {
    for (const set of sets) {
      const recorded = new Set(await recordedIn(trx, set.table));
      for (const name of Object.keys(set.migrations).sort()) {
        if (recorded.has(name)) continue;
        current = [];
        await set.migrations[name]!.up(trx);
        plan.push({ name: qualified(set, name), statements: current });
      }
    }
  } finally {
    await trx.rollback().catch(() => undefined);
  }
  return plan;
}

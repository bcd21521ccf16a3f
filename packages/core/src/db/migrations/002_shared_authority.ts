import type { Knex } from 'knex';
import { dialectOf } from '../connect.js';

/**
 * Several gateways on one database (docs/scaling.md):
 * - `login_failures`: the failed-login limit lives in the database, one row per key (a SHA-256 of
 *   username + client address), holding the times of the attempts still inside the window.
 * - Names compare byte for byte on MySQL/MariaDB too. `utf8mb4_bin` is a PAD SPACE collation there
 *   ("alice   " equals "alice"); a NO PAD binary collation is not. SQLite compares bytes already.
 */
const EXACT_COLUMNS: Array<[table: string, column: string]> = [
  ['users', 'username'],
  ['core_groups', 'name'],
  ['jde_associations', 'toolkit'],
  ['jde_associations', 'toolkit_group'],
  ['toolkit_overrides', 'toolkit'],
  ['toolkit_overrides', 'toolkit_group'],
];

/** MariaDB >= 10.2 has utf8mb4_nopad_bin, MySQL >= 8 utf8mb4_0900_bin; both are binary and NO PAD. */
async function noPadBinaryCollation(db: Knex): Promise<string | undefined> {
  for (const name of ['utf8mb4_nopad_bin', 'utf8mb4_0900_bin']) {
    const [rows] = (await db.raw('SHOW COLLATION WHERE Collation = ?', [name])) as [unknown[]];
    if (rows.length > 0) return name;
  }
  return undefined;
}

export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('login_failures', (table) => {
    table.specificType('key_hash', 'char(64)').primary();
    // Epoch milliseconds of the attempts inside the window, oldest first, comma-separated.
    table.text('attempts').notNullable();
    table.bigInteger('last_at').notNullable().index();
  });
  if (dialectOf(db).name !== 'mysql') return;
  const collation = await noPadBinaryCollation(db);
  // Without one (MySQL 5.7), lookups still compare exactly in code (UserDirectory, admin/lookups.ts).
  if (!collation) return;
  for (const [table, column] of EXACT_COLUMNS) {
    await db.raw(`ALTER TABLE ?? MODIFY ?? VARCHAR(64) CHARACTER SET utf8mb4 COLLATE ${collation} NOT NULL`, [table, column]);
  }
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('login_failures');
  if (dialectOf(db).name !== 'mysql') return;
  for (const [table, column] of EXACT_COLUMNS) {
    await db.raw('ALTER TABLE ?? MODIFY ?? VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL', [table, column]);
  }
}

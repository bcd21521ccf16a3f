import type { Knex } from 'knex';
import { dialectOf } from '../connect.js';

/**
 * API keys, machine identities (docs/api-keys.md). A key is stored only as the SHA-256 hex of its whole text
 * (`tkg_…`), the primary key: the check on every request is one primary-key read joined with its owner.
 * - `id`: the key's public name (what list shows, revoke takes, the audit trail records); never secret.
 * - `scope`: a JSON array of toolkit names; `[]` = every toolkit the owner may call.
 * - `expires_at`, `last_used_at`, `revoked_at`: epoch milliseconds, null when none (yet).
 * Times are BIGINT epoch milliseconds as in 001; the same on SQLite and MariaDB.
 */
export async function up(db: Knex): Promise<void> {
  const { exactTextColumn: exactText } = dialectOf(db);

  await db.schema.createTable('api_keys', (table) => {
    table.specificType('key_hash', 'char(64)').primary();
    exactText(table.string('id', 32).notNullable()).unique();
    table.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    exactText(table.string('name', 64).notNullable());
    table.text('scope').notNullable();
    table.bigInteger('created_at').notNullable();
    table.bigInteger('expires_at').nullable();
    table.bigInteger('last_used_at').nullable();
    table.bigInteger('revoked_at').nullable();
    table.index(['user_id', 'created_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('api_keys');
}

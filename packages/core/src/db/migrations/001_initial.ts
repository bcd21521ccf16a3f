import type { Knex } from 'knex';
import { dialectOf } from '../connect.js';

/**
 * The tables of README.md, "Database". Times are epoch milliseconds in BIGINT columns, so SQLite and
 * MariaDB agree to the millisecond whatever their time zones. Names compare case-sensitively on both.
 */
export async function up(db: Knex): Promise<void> {
  const { exactTextColumn: exactText } = dialectOf(db);

  await db.schema.createTable('core_groups', (table) => {
    table.increments('id').primary();
    exactText(table.string('name', 64).notNullable()).unique();
  });
  await db.schema.createTable('users', (table) => {
    table.increments('id').primary();
    exactText(table.string('username', 64).notNullable()).unique();
    table.string('password_hash', 255).notNullable();
    table.integer('power').notNullable().defaultTo(0);
    table.integer('core_group_id').unsigned().nullable().references('id').inTable('core_groups').onDelete('SET NULL');
    table.boolean('disabled').notNullable().defaultTo(false);
    table.bigInteger('created_at').notNullable();
    // Sessions created at or before this instant are void: how a CLI process ends a running gateway's sessions.
    table.bigInteger('sessions_revoked_at').notNullable().defaultTo(0);
  });
  await db.schema.createTable('jde_associations', (table) => {
    table.increments('id').primary();
    exactText(table.string('toolkit', 64).notNullable());
    table.integer('core_group_id').unsigned().notNullable().references('id').inTable('core_groups').onDelete('CASCADE');
    exactText(table.string('toolkit_group', 64).notNullable());
    table.unique(['toolkit', 'core_group_id']);
  });
  await db.schema.createTable('toolkit_overrides', (table) => {
    table.increments('id').primary();
    exactText(table.string('toolkit', 64).notNullable());
    table.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    exactText(table.string('toolkit_group', 64).notNullable());
    table.unique(['toolkit', 'user_id']);
  });
  await db.schema.createTable('sessions', (table) => {
    table.specificType('token_hash', 'char(64)').primary();
    table.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    table.bigInteger('created_at').notNullable();
    table.bigInteger('last_used_at').notNullable();
    table.bigInteger('expires_at').notNullable();
    // Breaks ties between logins of the same millisecond, so eviction stays oldest-first after a reload.
    table.bigInteger('login_seq').notNullable();
    table.index(['user_id', 'created_at', 'login_seq']);
    table.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['sessions', 'toolkit_overrides', 'jde_associations', 'users', 'core_groups']) {
    await db.schema.dropTableIfExists(table);
  }
}

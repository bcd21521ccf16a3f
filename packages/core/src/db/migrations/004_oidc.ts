import type { Knex } from 'knex';
import { dialectOf } from '../connect.js';

/**
 * Single sign-on with OpenID Connect (docs/sso.md):
 * - `users.oidc_provider` + `users.oidc_subject`: who signed a user in (unique together); a user signed in by a
 *   provider has the empty string as password_hash, which no password matches (users/passwords.ts).
 * - `oidc_pending_logins`: a login sent to a provider, by the SHA-256 of its `state`; single use, 10 minutes.
 * - `oidc_login_codes`: a signed-in user waiting for the front end's exchange, by the SHA-256 of the code; 60 s.
 * - `sessions.oidc_*`: the provider, `sub` and IdP session `sid` of a session, for back-channel logout, and the
 *   provider's end-session URL (with its `id_token_hint`) for RP-initiated logout.
 * - `oidc_logout_tokens`: the `jti` of each back-channel logout token seen, until it could no longer be fresh.
 */
export async function up(db: Knex): Promise<void> {
  const { exactTextColumn: exactText } = dialectOf(db);

  await db.schema.alterTable('users', (table) => {
    exactText(table.string('oidc_provider', 32).nullable());
    exactText(table.string('oidc_subject', 255).nullable());
    table.unique(['oidc_provider', 'oidc_subject']);
  });
  await db.schema.createTable('oidc_pending_logins', (table) => {
    table.specificType('state_hash', 'char(64)').primary();
    table.string('provider', 32).notNullable();
    table.string('nonce', 128).notNullable();
    table.string('code_verifier', 128).notNullable();
    table.text('return_to').notNullable();
    table.bigInteger('expires_at').notNullable().index();
  });
  await db.schema.createTable('oidc_login_codes', (table) => {
    table.specificType('code_hash', 'char(64)').primary();
    table.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    table.string('provider', 32).notNullable();
    table.string('subject', 255).notNullable();
    table.string('sid', 255).nullable();
    table.text('end_session_url').nullable();
    table.bigInteger('expires_at').notNullable().index();
  });
  await db.schema.alterTable('sessions', (table) => {
    table.string('oidc_provider', 32).nullable();
    table.string('oidc_subject', 255).nullable();
    table.string('oidc_sid', 255).nullable();
    table.text('oidc_end_session_url').nullable();
    table.index(['oidc_provider', 'oidc_subject']);
    table.index(['oidc_provider', 'oidc_sid']);
  });
  await db.schema.createTable('oidc_logout_tokens', (table) => {
    // SHA-256 of provider + jti: a jti is unique per issuer only.
    table.specificType('jti_hash', 'char(64)').primary();
    table.bigInteger('expires_at').notNullable().index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('oidc_logout_tokens');
  await db.schema.alterTable('sessions', (table) => {
    table.dropIndex(['oidc_provider', 'oidc_subject']);
    table.dropIndex(['oidc_provider', 'oidc_sid']);
    table.dropColumns('oidc_provider', 'oidc_subject', 'oidc_sid', 'oidc_end_session_url');
  });
  await db.schema.dropTableIfExists('oidc_login_codes');
  await db.schema.dropTableIfExists('oidc_pending_logins');
  await db.schema.alterTable('users', (table) => {
    table.dropUnique(['oidc_provider', 'oidc_subject']);
    table.dropColumns('oidc_provider', 'oidc_subject');
  });
}

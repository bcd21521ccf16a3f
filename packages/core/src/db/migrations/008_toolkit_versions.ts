import type { Knex } from 'knex';

/**
 * `toolkit_versions`: the good versions of each toolkit file the gateways have served, one row per toolkit
 * name and content hash (SHA-256 of the file's bytes), so a gateway whose file of a toolkit is refused at
 * start can serve that toolkit's last good version (`toolkits.on_invalid_at_start: last_good`) instead of
 * refusing to start. `recorded_at` (ms since the epoch) is when an instance last served that version, and
 * `instance` which one (host and pid). A handful of rows per name: older versions are pruned as new ones
 * are recorded (toolkits/toolkit-versions.ts). Never readable through toolkit configuration (a file may
 * hold an upstream's key).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('toolkit_versions', (table) => {
    table.string('name', 128).notNullable();
    table.specificType('content_hash', 'char(64)').notNullable();
    // MySQL's TEXT stops at 64 KiB; MEDIUMTEXT holds 16 MiB (other databases take their plain text type).
    table.text('content', 'mediumtext').notNullable();
    table.bigInteger('recorded_at').notNullable();
    table.string('instance', 255).notNullable();
    table.primary(['name', 'content_hash']);
    table.index(['name', 'recorded_at'], 'toolkit_versions_name_recorded');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('toolkit_versions');
}

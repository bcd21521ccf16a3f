import type { Knex } from 'knex';

/**
 * A case-sensitive prefix or substring search that reads alike on every database: the text is matched as
 * it is, its own wildcard characters included.
 * - SQLite: LIKE ignores ASCII case (and PRAGMA case_sensitive_like is per connection and deprecated), so
 *   GLOB, which compares bytes; the text's `*`, `?` and `[` are escaped as one-character classes.
 * - MySQL/MariaDB: LIKE follows the column's collation (utf8mb4_general_ci by default: case- and
 *   accent-insensitive), so a LIKE of binary strings decides; the plain LIKE before it keeps a prefix
 *   search able to use the column's index (as whereExactly does for `=`).
 * - PostgreSQL: LIKE is case-sensitive.
 * Outside SQLite the text's `%`, `_` and the escape character `!` are escaped with `!`.
 */
export type SearchMode = 'prefix' | 'contains';

export interface TextSearch {
  /** The bound value for a search of `text`, in this database's pattern syntax. */
  pattern(mode: SearchMode, text: string): string;
  /** `column` matches `pattern` (a value from pattern(), or a prepared read's parameter stand-in). */
  where(builder: Knex.QueryBuilder, column: string, pattern: unknown): Knex.QueryBuilder;
}

const globText = (text: string) => text.replace(/[[*?]/g, '[$&]');
const likeText = (text: string) => text.replace(/[!%_]/g, '!$&');

const SQLITE: TextSearch = {
  pattern: (mode, text) => (mode === 'prefix' ? `${globText(text)}*` : `*${globText(text)}*`),
  where: (builder, column, pattern) => builder.whereRaw('?? GLOB ?', [column, pattern as Knex.Value]),
};

const likePattern = (mode: SearchMode, text: string) => (mode === 'prefix' ? `${likeText(text)}%` : `%${likeText(text)}%`);

const MYSQL: TextSearch = {
  pattern: likePattern,
  where: (builder, column, pattern) =>
    builder
      .whereRaw("?? LIKE ? ESCAPE '!'", [column, pattern as Knex.Value])
      .whereRaw("CAST(?? AS BINARY) LIKE CAST(? AS BINARY) ESCAPE '!'", [column, pattern as Knex.Value]),
};

const STANDARD: TextSearch = {
  pattern: likePattern,
  where: (builder, column, pattern) => builder.whereRaw("?? LIKE ? ESCAPE '!'", [column, pattern as Knex.Value]),
};

/** The search of the database `db` (a knex instance or builder) speaks. */
export function textSearch(db: { client: { config: { client?: unknown } } }): TextSearch {
  const client = String(db.client.config.client);
  return client === 'better-sqlite3' ? SQLITE : client === 'mysql2' ? MYSQL : STANDARD;
}

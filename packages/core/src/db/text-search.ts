import { dialectOf } from './connect.js';
import type { TextSearch } from './dialect.js';

export type { SearchMode, TextSearch } from './dialect.js';

/**
 * The case-sensitive prefix or substring search of the database `db` (a knex instance or builder): the text
 * is matched as it is, its own wildcard characters included (SQLite's GLOB, LIKE elsewhere; each dialect says why).
 */
export const textSearch = (db: Parameters<typeof dialectOf>[0]): TextSearch => dialectOf(db).search;

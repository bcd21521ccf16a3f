/** Whether a database error is a unique-key violation (MySQL/MariaDB or SQLite): someone else wrote that key first. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'ER_DUP_ENTRY' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

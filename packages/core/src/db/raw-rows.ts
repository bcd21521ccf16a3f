/** The rows of a `db.raw` select: mysql2 answers [rows, fields], node-postgres a result with `rows`, SQLite the rows. */
export function rawRows<Row>(result: unknown): Row[] {
  if (Array.isArray(result)) return (Array.isArray(result[0]) ? result[0] : result) as Row[];
  return ((result as { rows?: Row[] }).rows ?? []) as Row[];
}

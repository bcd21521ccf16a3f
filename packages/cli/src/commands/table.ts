/** Prints rows as aligned columns (the first row is the heading), two spaces apart, no trailing blanks. */
export function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    process.stdout.write(
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd() + '\n',
    );
}

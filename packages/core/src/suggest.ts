/** Edit distance (insertions, deletions, substitutions, adjacent swaps) between two short words. */
function distance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate nearest to what was typed, if it is near enough to be what was meant: a CLI command or
 * option, a toolkit or server config key.
 */
export function nearest(typed: string, candidates: Iterable<string>): string | undefined {
  let best: { name: string; score: number } | undefined;
  for (const name of candidates) {
    const score = distance(typed.toLowerCase(), name.toLowerCase());
    if (!best || score < best.score) best = { name, score };
  }
  return best && best.score <= Math.max(1, Math.floor(typed.length / 3)) ? best.name : undefined;
}

/** Durations in configuration: "500ms", "45s", "30m", "2h", "90d", or a plain number of seconds. */
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.round(value * 1000);
  if (typeof value === 'string') {
    const match = DURATION.exec(value.trim());
    if (match) return Math.round(Number(match[1]) * unitMs[match[2] ?? 's']!);
  }
  throw new Error('must be a duration such as "500ms", "45s", "30m", "2h", "90d" or a number of seconds');
}

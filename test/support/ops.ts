import { eventually } from './eventually.js';
import type { GatewayProcess } from './gateway-process.js';

/** One polling helper for every suite (test/support/eventually.ts). */
export { eventually };

/** The first log line of a running gateway that matches. */
export const logLine = (gateway: GatewayProcess, what: string, match: (line: Record<string, unknown>) => boolean) =>
  eventually(what, () => gateway.logs.find(match));

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Scrapes GET /metrics of the gateway's metrics listener (its URL is in the 'metrics listening' line). */
export async function scrape(gateway: GatewayProcess): Promise<{ contentType: string; samples: Sample[] }> {
  const url = String(gateway.logs.find((line) => line.msg === 'metrics listening')?.url);
  const response = await fetch(url);
  const text = await response.text();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return { contentType: response.headers.get('content-type') ?? '', samples };
}

/** The value of one sample (0 when absent); `labels` must match exactly the given keys. */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.find((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  return found?.value ?? 0;
}

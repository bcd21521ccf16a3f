/**
 * A counter and a histogram for the per-request metrics, tallied in plain nested maps and read by the
 * registry at each scrape. prom-client's own inc and observe check and hash their labels on every call:
 * a real share of a status call's CPU (docs/performance.md, "Request metrics tallied"). A scrape
 * reads the shapes prom-client's Counter and Histogram give, so the text, a worker's JSON and the
 * cluster's sum are the same.
 */
import type { Metric, MetricValue, Registry } from 'prom-client';

type Labels = Record<string, string | number>;

/** Series by label values, one map level per label: no key string is built per call. */
class Series<T> {
  private readonly root = new Map<string | number, unknown>();

  constructor(
    private readonly labelNames: readonly string[],
    private readonly create: () => T,
  ) {}

  get(values: readonly (string | number)[]): T {
    let level = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]!) as Map<string | number, unknown> | undefined;
      if (!next) level.set(values[i]!, (next = new Map()));
      level = next;
    }
    let series = level.get(values[last]!) as T | undefined;
    if (series === undefined) level.set(values[last]!, (series = this.create()));
    return series;
  }

  *entries(): Generator<[Labels, T]> {
    const walk = function* (level: Map<string | number, unknown>, depth: number, names: readonly string[], labels: Labels): Generator<[Labels, T]> {
      for (const [value, next] of level) {
        const here = { ...labels, [names[depth]!]: value };
        if (depth === names.length - 1) yield [here, next as T];
        else yield* walk(next as Map<string | number, unknown>, depth + 1, names, here);
      }
    };
    yield* walk(this.root, 0, this.labelNames, {});
  }
}

/** What the registry reads: prom-client's metric shape with our values. */
function registerMetric(registry: Registry, name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue<string>[]): void {
  const read = () => ({ name, help, type, aggregator: 'sum', values: values() });
  registry.registerMetric({ name, help, type, aggregator: 'sum', get: async () => read() } as unknown as Metric);
}

export class TalliedCounter {
  private readonly series: Series<{ count: number }>;

  constructor(registry: Registry, name: string, help: string, labelNames: readonly string[]) {
    this.series = new Series(labelNames, () => ({ count: 0 }));
    registerMetric(registry, name, help, 'counter', () => [...this.series.entries()].map(([labels, { count }]) => ({ labels, value: count })));
  }

  inc(labelValues: readonly (string | number)[]): void {
    this.series.get(labelValues).count += 1;
  }

  /** One series, to be counted with `series.count += 1` and no label lookup per call. */
  seriesOf(labelValues: readonly (string | number)[]): { count: number } {
    return this.series.get(labelValues);
  }
}

interface Buckets {
  /** Observations per bucket (not cumulative). */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class TalliedHistogram {
  private readonly series: Series<Buckets>;

  constructor(
    registry: Registry,
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly upperBounds: readonly number[],
  ) {
    this.series = new Series(labelNames, () => ({ counts: new Float64Array(upperBounds.length), sum: 0, count: 0 }));
    registerMetric(registry, name, help, 'histogram', () => this.values(name));
  }

  observe(labelValues: readonly (string | number)[], value: number): void {
    const buckets = this.series.get(labelValues);
    // A loop, not findIndex: its callback was a closure over `value` on every request.
    const bounds = this.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        buckets.counts[i]! += 1;
        break;
      }
    }
    buckets.sum += value;
    buckets.count += 1;
  }

  private values(name: string): MetricValue<string>[] {
    const values: MetricValue<string>[] = [];
    const value = (labels: Labels, count: number, suffix: string) =>
      values.push({ labels, value: count, metricName: `${name}_${suffix}` } as MetricValue<string>);
    for (const [labels, { counts, sum, count }] of this.series.entries()) {
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => value({ le, ...labels }, (cumulative += counts[i]!), 'bucket'));
      value({ le: '+Inf', ...labels }, count, 'bucket');
      value(labels, sum, 'sum');
      value(labels, count, 'count');
    }
    return values;
  }
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { toolkitClient } from '../support/http.js';
import { scrape } from '../support/ops.js';
import { repoRoot } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Array<{ expr: string; refId: string }>;
}
interface Dashboard {
  title: string;
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; definition?: string }> };
}

/** PromQL words that are not metric names: aggregations, functions are followed by "(" and found apart. */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset']);

/**
 * The metric names a PromQL expression reads: what is left once strings, label matchers, ranges, grouping
 * clauses, functions and keywords are taken out.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const match of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*(?=\s*(\()?)/g)) {
    const [word, call] = [match[0], match[1]];
    if (call || KEYWORDS.has(word) || /^\d/.test(word)) continue;
    names.push(word);
  }
  return names;
}

const dashboard = JSON.parse(readFileSync(path.join(repoRoot, 'docs/grafana/tkgate.json'), 'utf8')) as Dashboard;

describe('the Grafana dashboard docs/grafana/tkgate.json', () => {
  const s = withGateway(
    dialects[0]!,
    [{ username: 'xavi', power: 7 }],
    {},
    {
      toolkitsDir: toolkitDir({
        'board.yaml': {
          name: 'board',
          type: 'app',
          endpoints: [
            { path: 'echo', method: 'GET', type: 'internal', handler: 'echo' },
            { path: 'limited', method: 'GET', type: 'internal', handler: 'echo', rate_limit: { limit: 1, window: '24h', per: 'endpoint' } },
            { path: 'job', method: 'GET', type: 'exec', run: 'async', command: ['/bin/true'] },
            // Targets that refuse: the per-target series exist after one call (502).
            { path: 'balanced', method: 'GET', type: 'http', upstream: { targets: ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b'] } },
          ],
        },
      }),
    },
  );

  it('reads the metric name extractor right', () => {
    expect(metricNames('histogram_quantile(0.99, sum by (le, route) (rate(tkgate_request_duration_seconds_bucket{job=~"$job", x="a(b)"}[5m])))')).to.deep.equal(
      ['tkgate_request_duration_seconds_bucket'],
    );
    expect(metricNames('sum(rate(a_total{s="5.."}[1m])) / sum(rate(b_total[1m])) * 60')).to.deep.equal(['a_total', 'b_total']);
  });

  it('is a dashboard whose every panel query reads only metrics a real gateway exports', async () => {
    expect(dashboard).to.include({ title: 'tkgate', uid: 'tkgate' });
    const queries = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(queries.length).to.be.above(10);
    expect(new Set(dashboard.panels.map((panel) => panel.id)).size, 'panel ids are unique').to.equal(dashboard.panels.length);
    // Traffic first, so that every labelled series exists: a login, a toolkit call, an error, a rate-limited call.
    const c = toolkitClient(s.gateway.base, await s.login('xavi'));
    expect((await c.get('board', 'echo')).status).to.equal(200);
    expect((await c.get('board', 'nothing')).status).to.equal(404);
    expect((await c.get('board', 'limited')).status).to.equal(200);
    expect((await c.get('board', 'limited')).status).to.equal(429);
    expect((await c.get('board', 'balanced')).status).to.equal(502);
    // A run that ends: tkgate_runs_total has its first series.
    const run = await c.get('board', 'job');
    expect(run.status).to.equal(202);
    await eventually('the run ends', async () => (await scrape(s.gateway)).samples.some((sample) => sample.name === 'tkgate_runs_total'));
    const exported = new Set((await scrape(s.gateway)).samples.map((sample) => sample.name));
    const used = new Set<string>();
    for (const panel of queries) {
      expect(panel.targets?.length ?? 0, panel.title).to.be.above(0);
      for (const target of panel.targets!) {
        const names = metricNames(target.expr);
        expect(names.length, `${panel.title}: ${target.expr}`).to.be.above(0);
        for (const name of names) {
          // Histograms are scraped as <name>_bucket, _sum and _count: those are the names queries use.
          expect(exported.has(name), `${panel.title}: ${name} is not exported`).to.equal(true);
          used.add(name.replace(/_(bucket|sum|count)$/, ''));
        }
      }
    }
    for (const variable of dashboard.templating.list) {
      const query = /^label_values\(([A-Za-z_:][\w:]*)/.exec(variable.definition ?? '');
      if (query) expect(exported.has(query[1]!), `variable ${variable.name}`).to.equal(true);
    }
    // Every metric of tkgate's own (docs/operating.md) has a panel.
    const own = [...exported].filter((name) => name.startsWith('tkgate_')).map((name) => name.replace(/_(bucket|sum|count)$/, ''));
    expect(
      [...new Set(own)].filter((name) => !used.has(name)),
      'tkgate metrics without a panel',
    ).to.deep.equal([]);
  });
});

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot, tempDir } from '../support/paths.js';

interface Row {
  name: string;
  rps?: number;
  p99?: number;
  non2xx?: number;
  errors?: number;
  peak_rss_mb?: number;
  p50?: number;
  kb_per_pair?: number;
  kb_per_pair_collected?: number;
  rss_empty_mb?: number;
}

/** The bench runs from a clean checkout and every scenario and peer produces numbers (no timing is asserted). */
describe('npm run bench -- --smoke', function () {
  // Nineteen scenarios, on a machine others load too (at load average 20 a run took over 400 s).
  this.timeout(900_000);

  it('measures every scenario against its baselines and peers and writes the JSON and Markdown reports', async () => {
    const out = tempDir('tkgate-bench-out-');
    const code = await new Promise<number>((resolve) => {
      const bench = spawn(process.execPath, [path.join(repoRoot, 'scripts/bench/run.js'), '--smoke', '--out', out], { stdio: ['ignore', 'ignore', 'inherit'] });
      bench.on('exit', (exitCode) => resolve(exitCode ?? -1));
    });
    expect(code).to.equal(0);
    const report = JSON.parse(readFileSync(path.join(out, 'latest.json'), 'utf8')) as { results: Array<{ scenario: string; rows: Row[] }> };
    const scenarios = report.results.map((r) => r.scenario.split('.')[0]);
    for (const number of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15', '16', '17', '18', '20'])
      expect(scenarios, number).to.include(number);

    const proxyRows = report.results.find((r) => r.scenario.startsWith('3.'))!.rows.map((row) => row.name);
    for (const peer of [
      'tkgate',
      'tkgate, workers: 2',
      'tkgate, log.access: false',
      'upstream direct',
      'bare Koa + undici proxy (no auth)',
      'fast-gateway (Map token check)',
      'express-gateway (key-auth)',
    ]) {
      expect(proxyRows, 'rows of the http scenario').to.include(peer);
    }
    expect(report.results.find((r) => r.scenario.startsWith('1.'))!.rows.map((row) => row.name)).to.include.members([
      'fast-gateway (Map token check)',
      'tkgate, log.access: false',
    ]);

    for (const result of report.results) {
      if (result.scenario.startsWith('7')) {
        expect(result.rows[0]!.peak_rss_mb, result.scenario).to.be.a('number').above(0);
        expect(result.rows[0]!.rss_empty_mb).to.be.a('number').above(0);
        continue;
      }
      if (result.scenario.startsWith('13.') && result.rows.every((row) => row.rps === undefined)) {
        // Runs: latencies of sequential calls and of lines reaching followers, not a load (the 202 under load is below).
        for (const row of result.rows) expect(row.p50, `${result.scenario} / ${row.name}`).to.be.a('number').at.least(0);
        continue;
      }
      if (result.scenario.startsWith('16.')) {
        for (const row of result.rows) {
          expect(row.kb_per_pair, `${result.scenario} / ${row.name}, settled`).to.be.a('number').above(0);
          // The smoke run's 200 pairs hold about 4 MB, within what RSS after a full collection moves by on its own (a CI
          // run read tkgate's as -0.2 MB): a figure is all it must give; the full run's 9,900 pairs are judged.
          expect(row.kb_per_pair_collected, `${result.scenario} / ${row.name}, after a full collection`).to.be.a('number');
        }
        continue;
      }
      if (result.scenario.startsWith('20.')) {
        // Runs at scale (SQLite only in smoke): latencies of runs asked one at a time, and one burst drained.
        for (const row of result.rows) {
          const label = `${result.scenario} / ${row.name}`;
          if (row.rps === undefined) expect(row.p50, label).to.be.a('number').at.least(0);
          else expect(row.rps, label).to.be.a('number').above(0);
        }
        continue;
      }
      if (result.scenario.startsWith('6')) continue; // a one-second storm may finish no argon2id login on a busy machine
      if (result.scenario.startsWith('13.')) {
        // The 202 under load: at load average 28 a one-second window saw no 202 answered (each took over a second
        // there); what must hold is that no answer failed (no 503 of a full queue).
        for (const row of result.rows) {
          const label = `${result.scenario} / ${row.name}`;
          expect(row.rps, label).to.be.a('number').at.least(0);
          expect(row.non2xx, `${label}: answers that were not 2xx`).to.equal(0);
        }
        continue;
      }
      for (const row of result.rows) {
        const label = `${result.scenario} / ${row.name}`;
        expect(row.rps, label).to.be.a('number').above(0);
        expect(row.p99, label).to.be.a('number');
        expect(row.non2xx, `${label}: answers that were not 2xx`).to.equal(0);
      }
    }
    // The new calls measured under load (docs/performance.md, "Where the goals stand"): the async call's 202 beside the sync exec call, a WebSocket message
    // beside a bare relay (the generic checks above: messages or requests per second, a p99, no failed answer).
    const underLoad = (prefix: string) => report.results.find((r) => r.scenario.startsWith(prefix) && r.rows.some((row) => row.rps !== undefined));
    expect(
      underLoad('13.')?.rows.map((row) => row.name),
      'the 202 under load',
    ).to.include('sync exec (200, the script run)');
    expect(
      underLoad('17.')?.rows.map((row) => row.name),
      'a WebSocket message relayed',
    ).to.include('bare ws relay (no auth)');
    expect(readFileSync(path.join(out, 'latest.md'), 'utf8')).to.match(/^# tkgate bench \(smoke\)/);
  });
});

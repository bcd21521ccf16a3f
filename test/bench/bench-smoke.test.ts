import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot, tempDir } from '../support/paths.js';

/** The bench runs from a clean checkout and every scenario produces numbers (no timing is asserted). */
describe('npm run bench -- --smoke', function () {
  this.timeout(180_000);

  it('measures every scenario and writes the JSON and Markdown reports', async () => {
    const out = tempDir('tkgate-bench-out-');
    const code = await new Promise<number>((resolve) => {
      const bench = spawn(process.execPath, [path.join(repoRoot, 'scripts/bench/run.js'), '--smoke', '--out', out], { stdio: ['ignore', 'ignore', 'inherit'] });
      bench.on('exit', (exitCode) => resolve(exitCode ?? -1));
    });
    expect(code).to.equal(0);
    const report = JSON.parse(readFileSync(path.join(out, 'latest.json'), 'utf8'));
    const scenarios = report.results.map((r: { scenario: string }) => r.scenario.split('.')[0]);
    for (const number of ['1', '2', '3', '4', '5', '6', '7']) expect(scenarios, number).to.include(number);
    for (const result of report.results) {
      if (result.scenario.startsWith('7')) {
        expect(result.target.peak_rss_mb, result.scenario).to.be.a('number').above(0);
        expect(result.rss_empty_mb).to.be.a('number').above(0);
        continue;
      }
      expect(result.target.rps, result.scenario).to.be.a('number').above(0);
      expect(result.target.p99, result.scenario).to.be.a('number');
      expect(result.target.non2xx, `${result.scenario}: answers that were not 2xx`).to.equal(0);
      if (result.baseline) expect(result.baseline.rps, `${result.scenario} baseline`).to.be.a('number').above(0);
    }
    expect(readFileSync(path.join(out, 'latest.md'), 'utf8')).to.match(/^# tkgate bench \(smoke\)/);
  });
});

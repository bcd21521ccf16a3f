import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { withDatabase } from '../support/suite.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir, type ToolkitDoc } from '../support/toolkit-files.js';

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const toolkit = (name: string, endpoints: unknown[], extra: Record<string, unknown> = {}): ToolkitDoc => ({ name, type: 'app', endpoints, ...extra });
const limited = (rateLimit: unknown) => echoEndpoint({ rate_limit: rateLimit });

/** Broken rate_limit keys, each with the key path and reason `config check` must name. */
const broken: Array<[string, ToolkitDoc, string, RegExp]> = [
  ['zero.yaml', toolkit('r1', [limited({ limit: 0, window: '1m' })]), 'endpoints.0.rate_limit.limit', /1|greater|least/i],
  ['fraction.yaml', toolkit('r2', [limited({ limit: 1.5, window: '1m' })]), 'endpoints.0.rate_limit.limit', /integer|whole/i],
  ['no-limit.yaml', toolkit('r3', [limited({ window: '1m' })]), 'endpoints.0.rate_limit.limit', /.+/],
  ['short.yaml', toolkit('r4', [limited({ limit: 5, window: '500ms' })]), 'endpoints.0.rate_limit.window', /whole seconds from 1s to 24h/],
  ['long.yaml', toolkit('r5', [limited({ limit: 5, window: '25h' })]), 'endpoints.0.rate_limit.window', /whole seconds from 1s to 24h/],
  ['not-duration.yaml', toolkit('r6', [limited({ limit: 5, window: 'often' })]), 'endpoints.0.rate_limit.window', /duration/],
  ['bad-per.yaml', toolkit('r7', [limited({ limit: 5, window: '1m', per: 'group' })]), 'endpoints.0.rate_limit.per', /user|client|endpoint/],
  ['extra-key.yaml', toolkit('r8', [limited({ limit: 5, window: '1m', burst: 2 })]), 'endpoints.0.rate_limit.burst', /unknown key|nrecognized/],
  ['toolkit-level.yaml', toolkit('r9', [echoEndpoint()], { rate_limit: { limit: -1, window: '1m' } }), 'rate_limit.limit', /.+/],
];

for (const dialect of dialects) {
  describe(`rate_limit in toolkit files (${dialect.name})`, () => {
    const s = withDatabase(dialect, []);
    let config: string;
    before(() => {
      config = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions });
    });

    it('tkgate config check names the key path and the reason of every bad rate_limit', async () => {
      const result = await runCli(['config', 'check', toolkitDir(Object.fromEntries(broken.map(([file, doc]) => [file, doc]))), '--config', config]);
      expect(result.code).to.equal(1);
      const lines = result.stdout.trim().split('\n');
      for (const [file, , path, reason] of broken) {
        const line = lines.find((candidate) => new RegExp(`^${escape(file)}:\\d+:\\d+: ${escape(path)}( \\([^)]*\\))?: `).test(candidate));
        expect(line, `${file} ${path}\n${result.stdout}`).to.be.a('string');
        expect(line).to.match(reason);
      }
    });

    it('tkgate config check passes good ones: on an endpoint, on a toolkit, windows as text or seconds, per defaulting to user', async () => {
      const dir = toolkitDir({
        'good.yaml': toolkit(
          'good',
          [limited({ limit: 10, window: 60 }), echoEndpoint({ path: 'other', rate_limit: { limit: 1, window: '24h', per: 'client' } })],
          {
            rate_limit: { limit: 100, window: '1m', per: 'endpoint' },
          },
        ),
      });
      const result = await runCli(['config', 'check', dir, '--config', config]);
      expect(result.code, result.stdout + result.stderr).to.equal(0);
    });
  });
}

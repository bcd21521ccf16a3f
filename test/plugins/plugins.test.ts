import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { toolkitClient } from '../support/http.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir, type ToolkitDoc } from '../support/toolkit-files.js';
import { passwordOf } from '../support/fixtures.js';
import { loginToken } from '../support/http.js';

const examplePlugin = path.join(repoRoot, 'docs/examples/static-plugin.js');

const portal: ToolkitDoc = {
  name: 'portal',
  type: 'app',
  default_group: 'guest',
  endpoints: [
    { path: 'motd', method: 'GET', type: 'static', value: { message: 'Welcome' }, by_group: { staff: { message: 'Welcome back' } } },
    { path: 'now', method: 'GET', type: 'internal', handler: 'static.now' },
  ],
};

function pluginFile(source: string): string {
  const file = path.join(tempDir('tkgate-plugin-'), 'plugin.mjs');
  writeFileSync(file, source);
  return file;
}

for (const dialect of dialects) {
  describe(`plugins (${dialect.name})`, () => {
    const s = withDatabase(dialect, [{ username: 'vic', group: 'staff' }, { username: 'wes' }]);
    const start = (plugins: string[], extra: Record<string, unknown> = {}) =>
      runCli([
        'start',
        '--config',
        writeConfig({ db: s.bed.dbConfig, plugins, toolkits: { dir: toolkitDir({}), watch: false }, server: { port: 0 }, metrics: { port: 0 }, ...extra }),
      ]);

    it('loads the worked example of docs/plugins.md from its path and serves its endpoint type', async () => {
      const gateway = await startGateway({
        config: {
          db: s.bed.dbConfig,
          plugins: ['@tkgate/plugin-internal', examplePlugin],
          toolkits: { dir: toolkitDir({ 'portal.yaml': portal }), watch: false },
        },
      });
      try {
        await s.bed
          .db('jde_associations')
          .insert({ toolkit: 'portal', core_group_id: (await s.bed.db('core_groups').where({ name: 'staff' }).first('id')).id, toolkit_group: 'staff' });
        const vic = toolkitClient(gateway.base, await loginToken(gateway.base, 'vic', passwordOf('vic')));
        const wes = toolkitClient(gateway.base, await loginToken(gateway.base, 'wes', passwordOf('wes')));
        expect((await vic.get('portal', 'motd')).body.data).to.deep.equal({ message: 'Welcome back' });
        expect((await wes.get('portal', 'motd')).body.data).to.deep.equal({ message: 'Welcome' });
        const now = await wes.get('portal', 'now');
        expect(now.status).to.equal(200);
        expect(now.body.data.for).to.equal('wes');
        expect(Date.parse(now.body.data.now)).to.be.closeTo(Date.now(), 60_000);
        expect(gateway.logs.some((record) => record.msg === 'plugin loaded' && record.plugin === 'tkgate-plugin-static')).to.equal(true);
      } finally {
        await gateway.stop();
      }
    });

    it("validates the plugin's own keys and runs its checks, with key paths", async () => {
      const bad: ToolkitDoc = {
        name: 'portal',
        type: 'app',
        endpoints: [
          { path: 'a', method: 'GET', type: 'static', valeu: 1 },
          { path: 'b', method: 'GET', type: 'static', value: 1, by_group: { x: 1 }, overwrite_wrapping: ['-toolkit_group'] },
          { path: 'c', method: 'GET', type: 'static', value: 1, by_group: 'staff' },
        ],
      };
      const result = await runCli([
        'config',
        'check',
        toolkitDir({ 'portal.yaml': bad }),
        '--config',
        writeConfig({ db: s.bed.dbConfig, plugins: ['@tkgate/plugin-internal', examplePlugin] }),
      ]);
      expect(result.code).to.equal(1);
      const lines = result.stdout.trim().split('\n');
      // file:line:column: key path (endpoint): message; hint
      expect(
        lines.some((line) => /^portal\.yaml:\d+:\d+: endpoints\.0\.valeu \(GET a\): unknown key; did you mean value\?$/.test(line)),
        result.stdout,
      ).to.equal(true);
      expect(
        lines.some((line) =>
          /^portal\.yaml:\d+:\d+: endpoints\.1\.by_group \(GET b\): by_group needs toolkit_group, which overwrite_wrapping removes$/.test(line),
        ),
      ).to.equal(true);
      expect(lines.some((line) => /^portal\.yaml:\d+:\d+: endpoints\.2\.by_group \(GET c\): /.test(line))).to.equal(true);
    });

    const refusals: Array<[string, () => string[], RegExp, Record<string, unknown>?]> = [
      [
        'another plugin API version',
        () => [pluginFile("export default { name: 'old', apiVersion: 99, register() {} };")],
        /\(old\) needs plugin API 99; this tkgate has plugin API 1\.6/,
      ],
      [
        'a malformed default export',
        () => [pluginFile('export default { hello: 1 };')],
        /is malformed: its default export must be \{ name, apiVersion, register\(api\) \}/,
      ],
      ['a module that does not exist', () => ['tkgate-plugin-that-does-not-exist'], /plugin tkgate-plugin-that-does-not-exist cannot be loaded/],
      ['a type registered twice', () => ['@tkgate/plugin-internal', '@tkgate/plugin-internal'], /endpoint type internal is already registered/],
      [
        'a register that throws',
        () => [pluginFile("export default { name: 'thrower', apiVersion: 1, register() { throw new Error('no licence key'); } };")],
        /failed to register: no licence key/,
      ],
      [
        'options for a plugin that is not loaded',
        () => ['@tkgate/plugin-internal'],
        /plugin_options\.nope: no loaded plugin is named nope/,
        { plugin_options: { nope: {} } },
      ],
      [
        'a bad plugin option',
        () => ['@tkgate/plugin-exec'],
        /plugin_options\.@tkgate\/plugin-exec\.max_processes: /,
        { plugin_options: { '@tkgate/plugin-exec': { max_processes: 0 } } },
      ],
      [
        'an unknown http transport',
        () => ['@tkgate/plugin-http'],
        /plugin_options\.@tkgate\/plugin-http\.transport: /,
        { plugin_options: { '@tkgate/plugin-http': { transport: 'curl' } } },
      ],
      [
        'plugin options that are not an object',
        () => ['@tkgate/plugin-exec'],
        /plugin_options\.@tkgate\/plugin-exec: must be an object/,
        { plugin_options: { '@tkgate/plugin-exec': 5 } },
      ],
    ];
    for (const [what, plugins, message, extra] of refusals) {
      it(`refuses to start on ${what}, in one line`, async () => {
        const result = await start(plugins(), extra);
        expect(result.code).to.equal(1);
        expect(result.stderr.trim().split('\n')).to.have.length(1);
        expect(result.stderr).to.match(message);
      });
    }
  });
}

import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import YAML from 'yaml';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { writeConfig } from '../support/gateway-process.js';
import { repoRoot, tempDir } from '../support/paths.js';
import { withDatabase, withGateway } from '../support/suite.js';
import { createToolkitTables } from '../support/tables.js';
import { pluginsWithTestFunctions, toolkitDir, writeToolkit } from '../support/toolkit-files.js';
import { BROKEN, VALID, type Expected } from './broken-files.js';

/**
 * A person who breaks a toolkit file the usual ways can fix it from the message alone. Each broken
 * file's problems, exactly (line, column, key path, endpoint, message, hint), through `config check` (text
 * and JSON), the live reload's log line and a refused start; and the JSON Schema editors use, against the same files.
 */
type Fields = { file: string; line: number | null; column: number | null; path: string; endpoint: string | null; message: string; hint: string | null };
const fields = (file: string, [line, column, at, endpoint, message, hint]: Expected): Fields => ({ file, line, column, path: at, endpoint, message, hint });
const expected = (files = BROKEN) => files.flatMap(({ file, problems }) => problems.map((problem) => fields(file, problem)));
const sorted = (list: Fields[]) => [...list].sort((a, b) => a.file.localeCompare(b.file) || (a.line ?? 0) - (b.line ?? 0) || a.path.localeCompare(b.path));

for (const dialect of dialects) {
  describe(`toolkit diagnostics: file, line:column, key path, endpoint, message, hint (${dialect.name})`, () => {
    const s = withDatabase(dialect, []);
    let config: string;
    before(async () => {
      await createToolkitTables(s.bed.db);
      config = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions });
    });

    it(`config check --format json: one object per problem and line, exactly these for ${BROKEN.length} broken files`, async () => {
      expect(BROKEN.length).to.be.at.least(30);
      const dir = toolkitDir({ ...Object.fromEntries(BROKEN.map(({ file, text }) => [file, text])), ...VALID });
      const result = await runCli(['config', 'check', dir, '--config', config, '--format', 'json']);
      expect(result.code, result.stderr).to.equal(1);
      const printed = result.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Fields);
      expect(sorted(printed)).to.deep.equal(sorted(expected()));
    });

    it('config check (text): file:line:column: path (endpoint): message; hint, and a code frame under a syntax error', async () => {
      const pick = ['metod.yaml', 'indent.yaml', 'trailing-comma.json'];
      const dir = toolkitDir(Object.fromEntries(BROKEN.filter(({ file }) => pick.includes(file)).map(({ file, text }) => [file, text])));
      const result = await runCli(['config', 'check', dir, '--config', config]);
      expect(result.code).to.equal(1);
      expect(result.stdout).to.equal(
        [
          'indent.yaml:6:1: (file): not valid YAML: Sequence item without - indicator; check the indentation: the keys of one mapping start in one column, list items with "- "',
          '  4 |   - path: a',
          '  5 |     method: GET',
          '> 6 |    type: internal',
          '    | ^',
          '',
          'metod.yaml:4:5: endpoints.0.method (items/search): missing; GET (payload from the query string), POST (payload from the body), or both as a list.',
          'metod.yaml:5:5: endpoints.0.metod (items/search): unknown key; did you mean method?',
          'trailing-comma.json:5:76: (file): not valid JSON: expected a key in double quotes, found "}"; remove the comma before it: JSON allows no trailing comma',
          '  3 |   "type": "app",',
          '  4 |   "endpoints": [',
          '> 5 |     { "path": "a", "method": "GET", "type": "internal", "handler": "echo", }',
          '    |                                                                            ^',
          '',
          '',
        ].join('\n'),
      );
    });

    it('config check --format: anything but text or json is a usage error (exit 2)', async () => {
      const result = await runCli(['config', 'check', toolkitDir(VALID), '--config', config, '--format', 'xml']);
      expect(result.code).to.equal(2);
      expect(result.stderr).to.equal('tkgate config check: --format is text or json, not xml\n');
      const ok = await runCli(['config', 'check', toolkitDir(VALID), '--config', config, '--format', 'json']);
      expect([ok.code, ok.stdout]).to.deep.equal([0, '']);
    });

    it('a refused start (toolkits.on_invalid_at_start: refuse) names the problem in the same words', async () => {
      const metod = BROKEN.find(({ file }) => file === 'metod.yaml')!;
      const dir = toolkitDir({ 'metod.yaml': metod.text });
      const start = writeConfig({
        db: s.bed.dbConfig,
        plugins: pluginsWithTestFunctions,
        toolkits: { dir, watch: false, on_invalid_at_start: 'refuse' },
        server: { port: 0 },
        metrics: { port: 0 },
      });
      const result = await runCli(['start', '--config', start]);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.equal(
        'tkgate start: 2 problem(s) in toolkit files: metod.yaml:4:5: endpoints.0.method (items/search): missing; GET (payload from the query string), ' +
          'POST (payload from the body), or both as a list.; metod.yaml:5:5: endpoints.0.metod (items/search): unknown key; did you mean method?\n',
      );
    });

    it('a symlink to a file that is not a toolkit: no line of it reaches the output, only that it is not one', async () => {
      const secrets = path.join(tempDir(), 'secrets.yaml');
      writeFileSync(secrets, 'db_password: hunter2-SECRET\napi_token: AKIA-SECRET\nroot: x:0:0:root:/root:/bin/bash\n');
      const dir = toolkitDir({});
      symlinkSync(secrets, path.join(dir, 'linked.yaml'));
      const result = await runCli(['config', 'check', dir, '--config', config, '--format', 'json']);
      expect(result.stdout).not.to.match(/SECRET|password|token|root/);
      expect(JSON.parse(result.stdout)).to.deep.equal(
        fields('linked.yaml', [1, 1, '', null, 'is not a toolkit file: it has none of the keys name, type and endpoints', null]),
      );
    });
    it('a symlink to a file with a name or type but no endpoints: neither its values nor its other keys reach the output, a misspelt key still does', async () => {
      const secrets = path.join(tempDir(), 'service.yaml');
      writeFileSync(secrets, 'name: billing\ntype: prod-SECRET\nenabled: hunter2-SECRET\ndb_password: x-SECRET\napi_token: AKIA-SECRET\nendpoint: []\n');
      const dir = toolkitDir({});
      symlinkSync(secrets, path.join(dir, 'service.yaml'));
      const result = await runCli(['config', 'check', dir, '--config', config, '--format', 'json']);
      expect(result.stdout).not.to.match(/SECRET|password|token/);
      const problems = result.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Fields);
      expect(problems.map(({ path: at, message, hint }) => ({ path: at, message, hint }))).to.deep.include.members([
        { path: 'type', message: 'must be one of app, lib, not a string', hint: problems.find((problem) => problem.path === 'type')!.hint },
        { path: 'enabled', message: 'must be true or false, not a string', hint: problems.find((problem) => problem.path === 'enabled')!.hint },
        { path: 'endpoint', message: 'unknown key', hint: 'did you mean endpoints?' },
        { path: '', message: '2 more unknown keys', hint: 'is this a toolkit file?' },
      ]);
    });
  });

  describe(`toolkit diagnostics in the live reload's log line (${dialect.name})`, () => {
    const dir = toolkitDir(VALID);
    const s = withGateway(dialect, [], {}, { toolkitsDir: dir, prepare: createToolkitTables });
    const sample = BROKEN.filter(({ file }) =>
      ['metod.yaml', 'colums.yaml', 'indent.yaml', 'no-comma.json', 'unknown-column.yaml', 'same-route.yaml'].includes(file),
    );

    it('each problem of a refused edit is one `toolkit file refused` line with file, line, column, path, endpoint, message, hint', async () => {
      for (const { file, text } of sample) writeToolkit(dir, file, text);
      const refused = () => s.gateway.logs.filter((record) => record.msg === 'toolkit file refused');
      const want = expected(sample);
      const lines = await eventually('every refusal logged', () => (refused().length >= want.length ? refused() : undefined));
      const logged = lines.map(
        ({ file, line, column, path: at, endpoint, message, hint }) => ({ file, line, column, path: at, endpoint, message, hint }) as Fields,
      );
      expect(sorted(logged)).to.deep.equal(sorted(want));
      // The code frame quotes the file: it is for config check's reader, never for the log.
      expect(lines.every((record) => !('frame' in record))).to.equal(true);
    });

    it('a symlinked file that is not a toolkit is refused without its lines in the log', async () => {
      const secrets = path.join(tempDir(), 'env.yaml');
      writeFileSync(secrets, Array.from({ length: 30 }, (_, index) => `secret_${index}: value-${index}-SECRET`).join('\n') + '\n');
      symlinkSync(secrets, path.join(dir, 'env.yaml'));
      const record = await eventually('refused', () => s.gateway.logs.find((line) => line.msg === 'toolkit file refused' && line.file === 'env.yaml'));
      expect(record.message).to.equal('is not a toolkit file: it has none of the keys name, type and endpoints');
      expect(JSON.stringify(s.gateway.logs.filter((line) => line.file === 'env.yaml'))).not.to.match(/SECRET|secret_/);
    });
  });
}

describe('the JSON Schema (config/toolkit.schema.json) against the same files', () => {
  const schema = JSON.parse(readFileSync(path.join(repoRoot, 'config/toolkit.schema.json'), 'utf8')) as object;
  const validate = new Ajv2020({ allErrors: true, allowUnionTypes: true, validateFormats: false }).compile(schema);
  const parse = (file: string, text: string): unknown => (file.endsWith('.json') ? JSON.parse(text) : YAML.parse(text));

  it('accepts the valid files', () => {
    for (const [file, text] of Object.entries(VALID)) expect(validate(parse(file, text)), `${file}: ${JSON.stringify(validate.errors)}`).to.equal(true);
  });

  it('rejects every broken file whose mistake a schema can express, and accepts those only config check can see', () => {
    for (const { file, text, editor } of BROKEN) {
      if (!editor) continue;
      expect(validate(parse(file, text)), `${file}: ${JSON.stringify(validate.errors)}`).to.equal(editor === 'accepts');
    }
  });
});

import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';
import { withDatabase } from '../support/suite.js';
import { createToolkitTables } from '../support/tables.js';
import { echoEndpoint, pluginsWithTestFunctions, toolkitDir, type ToolkitDoc } from '../support/toolkit-files.js';

const internal = (extra: Record<string, unknown>) => ({ path: 'x', method: 'GET', type: 'internal', handler: 'echo', ...extra });
const select = (query: Record<string, unknown>) => ({ path: 'q', method: 'GET', type: 'internal', pseudo_querys: [query] });
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const toolkit = (name: string, endpoints: unknown[], extra: Record<string, unknown> = {}): ToolkitDoc => ({ name, type: 'app', endpoints, ...extra });

/** One broken file each, and the key path and reason its problem must name. */
const broken: Array<[string, ToolkitDoc | string, string, RegExp]> = [
  ['yaml-syntax.yaml', 'name: [unclosed', '(file)', /not valid YAML/],
  ['json-syntax.json', '{"name": ', '(file)', /not valid JSON/],
  ['unknown-top-key.yaml', toolkit('a1', [echoEndpoint()], { colour: 'red' }), 'colour', /unknown key/],
  ['bad-name.yaml', toolkit('Bad Name', [echoEndpoint()]), 'name', /\[a-z0-9\]/],
  ['bad-kind.yaml', { name: 'a2', type: 'web', endpoints: [echoEndpoint()] }, 'type', /app|lib/],
  ['wrong-type.yaml', toolkit('a3', [echoEndpoint()], { enabled: 'yes' }), 'enabled', /must be true or false, not the string "yes"/],
  ['no-endpoints.yaml', toolkit('a4', []), 'endpoints', /.+/],
  ['unknown-endpoint-key.yaml', toolkit('a5', [internal({ colour: 1 })]), 'endpoints.0.colour', /nrecognized key|unknown key/],
  [
    'unknown-type.yaml',
    toolkit('a6', [{ path: 'x', method: 'GET', type: 'ftp' }]),
    'endpoints.0.type',
    /unknown endpoint type ftp \(loaded: internal, http, exec, ssh, probe\)/,
  ],
  ['bad-method.yaml', toolkit('a7', [internal({ method: 'DELETE' })]), 'endpoints.0.method', /.+/],
  [
    'bad-regex.yaml',
    toolkit('a8', [internal({ client_filter: { field_rules: { q: { type: 'string', pattern: '(unclosed' } } } })]),
    'endpoints.0.client_filter.field_rules.q.pattern',
    /not a valid \(RE2\) regular expression/,
  ],
  [
    'backreference.yaml',
    toolkit('a9', [internal({ client_filter: { field_rules: { q: { pattern: '(a)\\1' } } } })]),
    'endpoints.0.client_filter.field_rules.q.pattern',
    /regular expression/,
  ],
  [
    'rule-type.yaml',
    toolkit('b1', [internal({ client_filter: { field_rules: { q: { type: 'text' } } } })]),
    'endpoints.0.client_filter.field_rules.q.type',
    /.+/,
  ],
  [
    'required-not-allowed.yaml',
    toolkit('b2', [internal({ client_filter: { allowed_fields: ['a'], required_fields: ['b'] } })]),
    'endpoints.0.client_filter.required_fields.0',
    /not in allowed_fields/,
  ],
  ['missing-table.yaml', toolkit('b3', [internal({ inject_db_context: ['ghosts.name'] })]), 'endpoints.0.inject_db_context.0', /table ghosts does not exist/],
  [
    'missing-column.yaml',
    toolkit('b4', [internal({ inject_db_context: ['profiles.phone'] })]),
    'endpoints.0.inject_db_context.0',
    /column profiles.phone does not exist/,
  ],
  [
    'read-sessions.yaml',
    toolkit('b5', [internal({ inject_db_context: ['sessions.token_hash'] })]),
    'endpoints.0.inject_db_context.0',
    /sessions can never be read/,
  ],
  [
    'read-password.yaml',
    toolkit('b6', [internal({ inject_db_context: ['users.password_hash'] })]),
    'endpoints.0.inject_db_context.0',
    /users.password_hash can never be read/,
  ],
  [
    'filter-password.yaml',
    toolkit('b7', [internal({ inject_db_context: ['users.username?password_hash=$payload.p'] })]),
    'endpoints.0.inject_db_context.0',
    /password_hash can never be read/,
  ],
  ['no-owner.yaml', toolkit('b8', [internal({ inject_db_context: ['items.title'] })]), 'endpoints.0.inject_db_context.0', /has no user_id column/],
  [
    'bad-entry.yaml',
    toolkit('b9', [internal({ inject_db_context: ['profiles.email; DROP TABLE users'] })]),
    'endpoints.0.inject_db_context.0',
    /must be "<table>.<column>"/,
  ],
  [
    'duplicate-key.yaml',
    toolkit('c1', [internal({ inject_db_context: ['profiles.email', 'users.username as email'] })]),
    'endpoints.0.inject_db_context.1',
    /key email is already set/,
  ],
  [
    'wrap-core.yaml',
    toolkit('c2', [internal({ inject_db_context: ['profiles.email as user_id'], overwrite_wrapping: ['user_id'] })]),
    'endpoints.0.overwrite_wrapping.0',
    /user_id may not be replaced/,
  ],
  ['wrap-unknown.yaml', toolkit('c3', [internal({ overwrite_wrapping: ['email'] })]), 'endpoints.0.overwrite_wrapping.0', /db_context has no key email/],
  ['remove-unknown.yaml', toolkit('c4', [internal({ overwrite_wrapping: ['-pwoer'] })]), 'endpoints.0.overwrite_wrapping.0', /no such field/],
  ['update-no-where.yaml', toolkit('c5', [select({ update: 'items', set: { status: 'x' } })]), 'endpoints.0.pseudo_querys.0.where', /.+/],
  [
    'update-empty-where.yaml',
    toolkit('c6', [select({ update: 'items', set: { status: 'x' }, where: {} })]),
    'endpoints.0.pseudo_querys.0.where',
    /non-empty where/,
  ],
  ['delete-no-where.yaml', toolkit('c7', [select({ delete: 'items', where: {} })]), 'endpoints.0.pseudo_querys.0.where', /non-empty where/],
  [
    'select-secret.yaml',
    toolkit('c8', [select({ select: 'users', columns: ['id', 'password_hash'] })]),
    'endpoints.0.pseudo_querys.0.columns.1',
    /password_hash can never be read/,
  ],
  [
    'select-sessions.yaml',
    toolkit('c9', [select({ select: 'sessions', columns: ['user_id'] })]),
    'endpoints.0.pseudo_querys.0.select',
    /sessions can never be read/,
  ],
  [
    'write-users.yaml',
    toolkit('d1', [select({ update: 'users', set: { power: 999 }, where: { id: '$context.user_id' } })]),
    'endpoints.0.pseudo_querys.0.update',
    /belongs to tkgate/,
  ],
  [
    'bad-reference.yaml',
    toolkit('d2', [select({ select: 'items', columns: ['id'], where: { title: '$request.body' } })]),
    'endpoints.0.pseudo_querys.0.where.title',
    /not a reference/,
  ],
  [
    'removed-context.yaml',
    toolkit('d3', [{ ...select({ select: 'items', columns: ['id'], where: { owner_id: '$context.user_id' } }), overwrite_wrapping: ['-user_id'] }]),
    'endpoints.0.pseudo_querys.0.where.owner_id',
    /no field user_id/,
  ],
  [
    'literal-type.yaml',
    toolkit('e1', [select({ select: 'items', columns: ['id'], where: { owner_id: 'abc' } })]),
    'endpoints.0.pseudo_querys.0.where.owner_id',
    /"abc" is not an integer, the type of items.owner_id/,
  ],
  [
    'two-ops.yaml',
    toolkit('d4', [select({ select: 'items', delete: 'items', columns: ['id'], where: { id: 1 } })]),
    'endpoints.0.pseudo_querys.0',
    /exactly one of/,
  ],
  ['unknown-handler.yaml', toolkit('d5', [internal({ handler: 'nope' })]), 'endpoints.0.handler', /no function named nope/],
  ['both-forms.yaml', toolkit('d6', [internal({ pseudo_querys: [{ select: 'items', columns: ['id'] }] })]), 'endpoints.0', /either pseudo_querys or handler/],
  ['duplicate-route.yaml', toolkit('d7', [internal({}), internal({ method: ['POST', 'GET'] })]), 'endpoints.1.path', /GET x is already defined/],
  ['bad-path.yaml', toolkit('d8', [internal({ path: '/leading/slash' })]), 'endpoints.0.path', /path segments/],
  [
    'unnamed-queries.yaml',
    toolkit('d9', [
      {
        path: 'q',
        method: 'GET',
        type: 'internal',
        pseudo_querys: [
          { select: 'items', columns: ['id'] },
          { select: 'items', columns: ['title'] },
        ],
      },
    ]),
    'endpoints.0.pseudo_querys.0.name',
    /need a name/,
  ],
];

for (const dialect of dialects) {
  describe(`toolkit file validation (${dialect.name})`, () => {
    const s = withDatabase(dialect, []);
    let config: string;
    before(async () => {
      await createToolkitTables(s.bed.db);
      config = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions });
    });

    it('tkgate config check lists every problem of every file, with file, key path and reason', async () => {
      const files = Object.fromEntries(broken.map(([file, doc]) => [file, doc]));
      const result = await runCli(['config', 'check', toolkitDir(files), '--config', config]);
      expect(result.code).to.equal(1);
      const lines = result.stdout.trim().split('\n');
      for (const [file, , path, reason] of broken) {
        const line = lines.find((candidate) => new RegExp(`^${escape(file)}:\\d+:\\d+: ${escape(path)}( \\([^)]*\\))?: `).test(candidate));
        expect(line, `${file} ${path}\n${result.stdout}`).to.be.a('string');
        expect(line).to.match(reason);
      }
      expect(result.stderr).to.match(/problem\(s\) in/);
    });

    it('tkgate config check passes good files and names their toolkits', async () => {
      const dir = toolkitDir({ 'one.yaml': toolkit('one', [echoEndpoint()]), 'two.json': toolkit('two', [echoEndpoint()]) });
      const result = await runCli(['config', 'check', dir, '--config', config]);
      expect(result.code, result.stdout + result.stderr).to.equal(0);
      expect(result.stdout).to.equal('2 file(s), toolkits: one, two: OK\n');
    });

    it('refuses both files defining one toolkit name, or the copy when one file is named after the toolkit', async () => {
      const dir = toolkitDir({ 'a.yaml': toolkit('same', [echoEndpoint()]), 'b.yaml': toolkit('same', [echoEndpoint()]) });
      const result = await runCli(['config', 'check', dir, '--config', config]);
      expect(result.code).to.equal(1);
      expect(result.stdout).to.equal(
        'a.yaml:1:7: name: toolkit same is defined in a.yaml and b.yaml: a name defined in several files is refused in each\n' +
          'b.yaml:1:7: name: toolkit same is defined in a.yaml and b.yaml: a name defined in several files is refused in each\n',
      );
      const named = toolkitDir({ 'kit.yaml': toolkit('kit', [echoEndpoint()]), 'kit-backup.yaml': toolkit('kit', [echoEndpoint()]) });
      const copy = await runCli(['config', 'check', named, '--config', config]);
      expect(copy.code).to.equal(1);
      expect(copy.stdout).to.equal('kit-backup.yaml:1:7: name: toolkit kit is also defined in kit.yaml, the file named after it; this copy is refused\n');
    });

    it('tkgate config check: a UTF-8 BOM is accepted in JSON as in YAML; UTF-16/32 and oversized files are named as such', async () => {
      const doc = (name: string) => JSON.stringify(toolkit(name, [echoEndpoint()]));
      const dir = toolkitDir({});
      writeFileSync(path.join(dir, 'bom.json'), `\uFEFF${doc('bom-json')}`);
      writeFileSync(path.join(dir, 'bom.yaml'), `\uFEFF${doc('bom-yaml')}`);
      writeFileSync(path.join(dir, 'wide.json'), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(doc('wide'), 'utf16le')]));
      writeFileSync(path.join(dir, 'wide-be.yaml'), Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(doc('wide-be'), 'utf16le').swap16()]));
      writeFileSync(path.join(dir, 'wider.json'), Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.from(doc('wider'), 'utf16le')]));
      writeFileSync(path.join(dir, 'no-bom.json'), Buffer.from(doc('no-bom'), 'utf16le'));
      writeFileSync(path.join(dir, 'latin1.yaml'), Buffer.from('name: caf\xe9\n', 'latin1'));
      const big = doc('big').replace('{', `{"description": "${'x'.repeat(3000)}",`);
      writeFileSync(path.join(dir, 'big.json'), big);
      const small = writeConfig({ db: s.bed.dbConfig, plugins: pluginsWithTestFunctions, toolkits: { max_file_bytes: 2048 } }, tempDir());
      const result = await runCli(['config', 'check', dir, '--config', small]);
      expect(result.code).to.equal(1);
      expect(result.stdout.trim().split('\n').sort()).to.deep.equal([
        `big.json: (file): is ${big.length} bytes, larger than toolkits.max_file_bytes (2048)`,
        'latin1.yaml: (file): is not valid UTF-8; save it as UTF-8',
        'no-bom.json: (file): contains NUL bytes: it looks like UTF-16 or UTF-32; save it as UTF-8',
        'wide-be.yaml: (file): is encoded as UTF-16 BE; save it as UTF-8',
        'wide.json: (file): is encoded as UTF-16 LE; save it as UTF-8',
        'wider.json: (file): is encoded as UTF-32 LE; save it as UTF-8',
      ]);
      rmSync(path.join(dir, 'big.json'));
      for (const file of ['latin1.yaml', 'no-bom.json', 'wide-be.yaml', 'wide.json', 'wider.json']) rmSync(path.join(dir, file));
      const ok = await runCli(['config', 'check', dir, '--config', config]);
      expect(ok.stdout).to.equal('2 file(s), toolkits: bom-json, bom-yaml: OK\n');
    });

    it('tkgate start refuses to start on a broken toolkit file, in one line, with toolkits.on_invalid_at_start: refuse', async () => {
      const dir = toolkitDir({
        'good.yaml': toolkit('good', [echoEndpoint()]),
        'bad.yaml': toolkit('bad', [internal({ inject_db_context: ['sessions.token_hash'] })]),
      });
      const result = await runCli([
        'start',
        '--config',
        writeConfig({
          db: s.bed.dbConfig,
          plugins: pluginsWithTestFunctions,
          toolkits: { dir, watch: false, on_invalid_at_start: 'refuse' },
          server: { port: 0 },
        }),
      ]);
      expect(result.code).to.equal(1);
      expect(result.stderr.trim().split('\n')).to.have.length(1);
      expect(result.stderr).to.match(
        /^tkgate start: 1 problem\(s\) in toolkit files: bad\.yaml:\d+:\d+: endpoints\.0\.inject_db_context\.0 \(GET x\): table sessions can never be read/,
      );
    });
  });
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { repoRoot } from '../support/paths.js';
import { pluginsWithTestFunctions, toolkitDir } from '../support/toolkit-files.js';

const endpoint = (extra: Record<string, unknown>) => ({ path: 'run', method: 'POST', type: 'exec', command: ['/bin/true'], ...extra });
const toolkit = (name: string, extra: Record<string, unknown>, endpointExtra: Record<string, unknown> = {}) => ({
  name,
  type: 'app',
  ...extra,
  endpoints: [endpoint(endpointExtra)],
});

describe('audit and audit_fields in toolkit files, and the table out of their reach', function () {
  this.timeout(60_000);

  it('config check refuses bad values, naming the key path', async () => {
    const dir = toolkitDir({
      'a.yaml': toolkit('a', { audit: 'yes' }),
      'b.yaml': toolkit('b', {}, { audit: 1 }),
      'c.yaml': toolkit('c', {}, { audit_fields: 'q' }),
      'd.yaml': toolkit('d', {}, { audit_fields: ['q', 'q'] }),
      'e.yaml': toolkit('e', {}, { client_filter: { allowed_fields: ['q'] }, audit_fields: ['q', 'token'] }),
      'f.yaml': {
        name: 'f',
        type: 'app',
        endpoints: [{ path: 'peek', method: 'GET', type: 'internal', handler: 'echo', inject_db_context: ['audit_events.details'] }],
      },
      'ok.yaml': toolkit('ok', { audit: false }, { audit: true, client_filter: { allowed_fields: ['q'] }, audit_fields: ['q'] }),
    });
    const config = writeConfig({ db: { client: 'sqlite', filename: path.join(dir, '..', 'check.sqlite') }, plugins: pluginsWithTestFunctions });
    const result = await runCli(['config', 'check', dir, '--config', config, '--format', 'json']);
    expect(result.code, result.stderr).to.equal(1);
    const problems = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { file: string; path: string; message: string; severity?: string })
      // exec's advice on the body size of every endpoint here is a warning, not a refusal.
      .filter((problem) => problem.severity !== 'warning');
    expect(problems.map((problem) => [problem.file, problem.path])).to.deep.equal([
      ['a.yaml', 'audit'],
      ['b.yaml', 'endpoints.0.audit'],
      ['c.yaml', 'endpoints.0.audit_fields'],
      ['d.yaml', 'endpoints.0.audit_fields.1'],
      ['e.yaml', 'endpoints.0.audit_fields.1'],
      ['f.yaml', 'endpoints.0.inject_db_context.0'],
    ]);
    expect(problems[3]!.message).to.include('listed twice');
    expect(problems[4]!.message).to.include('token is not in client_filter.allowed_fields');
    // The trail is out of toolkit configuration's reach, like sessions.
    expect(problems[5]!.message).to.include('table audit_events can never be read through configuration');
  });

  it('the JSON Schema of toolkit files describes both keys, as committed', () => {
    const schema = JSON.parse(readFileSync(path.join(repoRoot, 'config/toolkit.schema.json'), 'utf8')) as Record<string, any>;
    expect(schema.properties.audit.type).to.equal('boolean');
    const text = JSON.stringify(schema);
    expect(text).to.include('"audit_fields"');
  });
});

import { expect } from 'chai';
import type { GatewayError, RequestContext } from '@tkgate/core';
import { referencesOf, resolveCall, sshConfigSchema } from '@tkgate/plugin-ssh/engine';

const base = { nodes: { match: { role: 'web' } }, command: ['systemctl', 'restart', '$path.service'], ssh: { key: { secret: 'file:keys/deploy' } } };
const problems = (config: unknown) => {
  const parsed = sshConfigSchema.safeParse(config);
  return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe('ssh endpoint configuration', () => {
  it('has the defaults of docs/fleet.md', () => {
    const config = sshConfigSchema.parse(base);
    expect(config).to.deep.include({
      context: 'stdin',
      run: 'async',
      parallel: 10,
      keep_going: false,
      max_failures: 0,
      node_timeout: 600_000,
      connect_timeout: 10_000,
      max_output_bytes: 1_048_576,
    });
    expect(
      sshConfigSchema.parse({ ...base, ssh: { certificate: { ca_key: { secret: 'env:CA' }, principals: ['deploy'] } } }).ssh.certificate!.valid_for,
    ).to.equal(900_000);
  });

  it('refuses run: sync, a key and a certificate together (or neither), a bad percentage, a principal with a comma', () => {
    expect(problems({ ...base, run: 'sync' })).to.deep.equal(['run: ssh endpoints always run as runs: run may only be async']);
    expect(problems({ ...base, ssh: { key: 'k', certificate: { ca_key: 'c', principals: ['p'] } } })).to.deep.equal([
      'ssh: give ssh.key or ssh.certificate (one of them)',
    ]);
    expect(problems({ ...base, ssh: {} })).to.deep.equal(['ssh: give ssh.key or ssh.certificate (one of them)']);
    for (const bad of ['110%', 'ten', -1, 1.5]) {
      expect(problems({ ...base, max_failures: bad }), String(bad)).to.deep.equal([
        'max_failures: must be a count (0 or more) or a percentage from 0% to 100% such as "10%"',
      ]);
    }
    expect(sshConfigSchema.parse({ ...base, max_failures: '12.5%' }).max_failures).to.equal('12.5%');
    expect(problems({ ...base, ssh: { certificate: { ca_key: 'c', principals: ['a,b'] } } })).to.deep.equal([
      'ssh.certificate.principals.0: a principal has no comma, whitespace or control character',
    ]);
    expect(problems({ ...base, connect_timeout: '500ms' })).to.deep.equal(['connect_timeout: must be at least 1s']);
    expect(problems({ ...base, shell: true })).to.have.length(1);
  });

  it('names the references of the command and the selection, for the load-time check', () => {
    const config = sshConfigSchema.parse({ ...base, nodes: { match: { role: 'web', env: '$payload.env' } } });
    expect(referencesOf(config)).to.deep.equal([
      { kind: 'path', name: 'service', at: ['command', 2] },
      { kind: 'payload', name: 'env', at: ['nodes', 'match', 'env'] },
    ]);
  });

  it("takes each reference's value as one whole argument, and refuses a missing or structured one", () => {
    const config = sshConfigSchema.parse({
      ...base,
      command: ['run', '$payload.what', '$context.username', '--', '$path.service'],
      nodes: { match: { env: '$payload.env' } },
    });
    const context = (payload: Record<string, unknown>) =>
      ({ username: 'alice', payload: Object.assign(Object.create(null), payload), path_params: { service: 'nginx' } }) as unknown as RequestContext;
    expect(resolveCall(config, context({ what: '; rm -rf / $(id)', env: 3 }))).to.deep.equal({
      argv: ['run', '; rm -rf / $(id)', 'alice', '--', 'nginx'],
      match: { env: '3' },
    });
    const refusal = (payload: Record<string, unknown>) => {
      try {
        resolveCall(config, context(payload));
      } catch (err) {
        return err as GatewayError;
      }
      throw new Error('resolved');
    };
    expect(refusal({ env: 'prod' })).to.deep.include({ status: 400, code: 'invalid_payload' });
    expect(refusal({ env: 'prod' }).details).to.deep.equal([{ field: 'what', rule: 'required', message: 'command element 1 needs what' }]);
    expect(refusal({ what: ['a'], env: 'prod' }).details).to.deep.equal([
      { field: 'what', rule: 'type', message: 'what must be text, a number or a boolean (it goes into command element 1)' },
    ]);
    expect(refusal({ what: 'a\0b', env: 'prod' }).code).to.equal('invalid_payload');
  });
});

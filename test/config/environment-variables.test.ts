import { expect } from 'chai';
import { configurationReference, loadServerConfig } from '@tkgate/core';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot, tempDir } from '../support/paths.js';

/**
 * Every setting that a variable can carry, with a value other than its default as the environment would give
 * it, and what the gateway then uses (durations in ms). A new setting fails the first test until it is here.
 */
// prettier-ignore
const SAMPLES: Record<string, { env?: Record<string, string>; text: string; expected: unknown }> = {
  'server.host': { text: '127.0.0.2', expected: '127.0.0.2' },
  'server.port': { text: '8181', expected: 8181 },
  'server.base_url': { text: '/gw', expected: '/gw' },
  'server.max_body_bytes': { text: '2048', expected: 2048 },
  'server.body_timeout': { text: '10s', expected: 10_000 },
  'server.trust_proxy': { text: 'true', expected: true },
  'server.shutdown_delay': { text: '5s', expected: 5_000 },
  'server.workers': { text: '2', expected: 2 },
  'server.public_url': { text: 'https://gw.example.org', expected: 'https://gw.example.org' },
  'server.tls.cert': { env: { TKGATE_TLS_KEY: '/etc/tkgate/key.pem' }, text: '/etc/tkgate/cert.pem', expected: '/etc/tkgate/cert.pem' },
  'server.tls.key': { env: { TKGATE_TLS_CERT: '/etc/tkgate/cert.pem' }, text: '/etc/tkgate/key.pem', expected: '/etc/tkgate/key.pem' },
  'server.cors.origins': { text: 'https://a.example.org, https://b.example.org', expected: ['https://a.example.org', 'https://b.example.org'] },
  'db.client': { env: { TKGATE_DB_URL: 'mysql://u@127.0.0.1:3306/t' }, text: 'mysql', expected: 'mysql' },
  'db.filename': { text: '/var/lib/tkgate/x.sqlite', expected: '/var/lib/tkgate/x.sqlite' },
  'db.url': { text: 'mysql://u@127.0.0.1:3306/t', expected: 'mysql://u@127.0.0.1:3306/t' },
  'db.timeout': { text: '2s', expected: 2_000 },
  'sessions.idle_timeout': { text: '10m', expected: 600_000 },
  'sessions.absolute_lifetime': { text: '12h', expected: 43_200_000 },
  'sessions.max_per_user': { text: '3', expected: 3 },
  'sessions.persist': { text: 'false', expected: false },
  'sessions.cache_ttl': { text: '0', expected: 0 },
  'auth.admin_power': { text: '50', expected: 50 },
  'auth.login_max_failures': { text: '4', expected: 4 },
  'auth.login_window': { text: '5m', expected: 300_000 },
  'auth.password_login': { text: '0', expected: false },
  'auth.api_keys_per_user': { text: '7', expected: 7 },
  'audit.required': { text: 'TRUE', expected: true },
  'audit.retention': { text: '30d', expected: 2_592_000_000 },
  'runs.heartbeat': { text: '5s', expected: 5_000 },
  'runs.lost_after': { text: '2m', expected: 120_000 },
  'runs.cancel_grace': { text: '3s', expected: 3_000 },
  'runs.drain_timeout': { text: '1m', expected: 60_000 },
  'runs.retention': { text: '7d', expected: 604_800_000 },
  'runs.max_followers_per_run': { text: '50', expected: 50 },
  'runs.max_followers_per_user': { text: '10', expected: 10 },
  'runs.poll_interval': { text: '5s', expected: 5_000 },
  'runs.wakeups': { env: { TKGATE_REDIS_URL: 'redis://127.0.0.1:6379/0' }, text: 'redis', expected: 'redis' },
  'redis.url': { text: 'redis://127.0.0.1:6379/2', expected: 'redis://127.0.0.1:6379/2' },
  'notifications.max_attempts': { text: '3', expected: 3 },
  'notifications.give_up_after': { text: '2h', expected: 7_200_000 },
  'notifications.retry_base': { text: '1s', expected: 1_000 },
  'websocket.max_per_user': { text: '5', expected: 5 },
  'toolkits.dir': { text: '/etc/tkgate/toolkits', expected: '/etc/tkgate/toolkits' },
  'toolkits.watch': { text: 'false', expected: false },
  'toolkits.settle': { text: '1s', expected: 1_000 },
  'toolkits.rescan_interval': { text: '0', expected: 0 },
  'toolkits.max_file_bytes': { text: '4096', expected: 4096 },
  'toolkits.on_invalid_at_start': { text: 'skip', expected: 'skip' },
  'rate_limits.store': { env: { TKGATE_RATE_LIMITS_REDIS_URL: 'redis://127.0.0.1:6379/0' }, text: 'redis', expected: 'redis' },
  'rate_limits.redis_url': { text: 'redis://127.0.0.1:6379/1', expected: 'redis://127.0.0.1:6379/1' },
  'rate_limits.on_store_failure': { text: 'allow', expected: 'allow' },
  plugins: { text: '@tkgate/plugin-internal,@tkgate/plugin-http', expected: ['@tkgate/plugin-internal', '@tkgate/plugin-http'] },
  'log.level': { text: 'debug', expected: 'debug' },
  'log.access': { text: 'false', expected: false },
  'console.enabled': { text: 'false', expected: false },
  'metrics.enabled': { text: 'false', expected: false },
  'metrics.host': { text: '0.0.0.0', expected: '0.0.0.0' },
  'metrics.port': { text: '9999', expected: 9999 },
  'tracing.enabled': { text: 'true', expected: true },
  'tracing.endpoint': { text: 'http://127.0.0.1:4000/v1/traces', expected: 'http://127.0.0.1:4000/v1/traces' },
  'tracing.sample_ratio': { text: '0.25', expected: 0.25 },
  'tracing.service_name': { text: 'gw-eu', expected: 'gw-eu' },
  'fleet.inventory': { text: '/etc/tkgate/nodes.yaml', expected: [{ file: '/etc/tkgate/nodes.yaml' }] },
  'fleet.known_hosts': { text: '/etc/tkgate/known_hosts', expected: '/etc/tkgate/known_hosts' },
  'fleet.view_power': { text: '50', expected: 50 },
};
/** Objects taken whole: their secrets have variables of their own (docs/sso.md), the rest belongs in a file. */
const WHOLE_OBJECTS = ['auth.oidc.providers', 'auth.jwt_issuers', 'notifications.sinks', 'plugin_options'];

/** The value the gateway uses for a key: durations are under `<key>_ms`. */
function used(config: unknown, key: string): unknown {
  const parts = key.split('.');
  const parent = parts.slice(0, -1).reduce((node, part) => (node as Record<string, unknown>)[part], config) as Record<string, unknown>;
  const last = parts.at(-1)!;
  return last in parent ? parent[last] : parent[`${last}_ms`];
}

describe('every setting has an environment variable that works', () => {
  const cwd = tempDir();

  it('each setting but the whole objects names a variable, and each variable sets its setting', () => {
    for (const entry of configurationReference()) {
      if (WHOLE_OBJECTS.includes(entry.key)) {
        expect(entry.env, entry.key).to.equal(undefined);
        continue;
      }
      expect(entry.env, `${entry.key} has an environment variable`).to.match(/^TKGATE_[A-Z0-9_]+$/);
      const sample = SAMPLES[entry.key];
      expect(sample, `a sample value for ${entry.key} in this test`).not.to.equal(undefined);
      const config = loadServerConfig({ cwd, env: { ...sample!.env, [entry.env!]: sample!.text } });
      expect(used(config, entry.key), `${entry.env}=${sample!.text}`).to.deep.equal(sample!.expected);
      expect(used(loadServerConfig({ cwd, env: {} }), entry.key), `${entry.key} by default`).not.to.deep.equal(sample!.expected);
    }
  });

  it('the variables without a short name in the documentation are TKGATE_ and the key path', () => {
    const byKey = new Map(configurationReference().map((entry) => [entry.key, entry.env]));
    expect(byKey.get('server.public_url')).to.equal('TKGATE_SERVER_PUBLIC_URL');
    expect(byKey.get('server.cors.origins')).to.equal('TKGATE_SERVER_CORS_ORIGINS');
    expect(byKey.get('sessions.cache_ttl')).to.equal('TKGATE_SESSIONS_CACHE_TTL');
    expect(byKey.get('server.port')).to.equal('TKGATE_PORT');
  });

  it('a value a setting refuses names the variable, whatever the kind of setting', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['TKGATE_LOG_LEVEL', 'verbose', /environment variable TKGATE_LOG_LEVEL \(log\.level\): must be one of error, warn, info, debug, got "verbose"/],
      ['TKGATE_SESSIONS_CACHE_TTL', '1m', /environment variable TKGATE_SESSIONS_CACHE_TTL \(sessions\.cache_ttl\): must be at most 5s/],
      [
        'TKGATE_SERVER_CORS_ORIGINS',
        'https://a.example.org/path',
        /environment variable TKGATE_SERVER_CORS_ORIGINS \(server\.cors\.origins\): .* is not an origin/,
      ],
      ['TKGATE_PORT', '70000', /environment variable TKGATE_PORT \(server\.port\): must be a whole number from 0 to 65535/],
    ];
    for (const [name, value, message] of cases) expect(() => loadServerConfig({ cwd, env: { [name]: value } }), name).to.throw(message);
  });

  it('docs/configuration.md says in words what each setting accepts (no validator message)', () => {
    const page = readFileSync(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
    const providers = page.split('\n').find((line) => line.startsWith('| `auth.oidc.providers` |'));
    expect(providers).to.match(/a list of providers/);
    expect(page).not.to.match(/Invalid input|received symbol|expected array/);
  });

  it('tkgate says so in one line, naming the variable', async () => {
    const result = await runCli(['config', 'check', tempDir('tkgate-toolkits-'), '--config', writeConfig({})], { env: { TKGATE_LOG_LEVEL: 'verbose' } });
    expect(result.code).to.equal(1);
    expect(result.stderr.trim().split('\n')).to.have.length(1);
    expect(result.stderr).to.include('environment variable TKGATE_LOG_LEVEL (log.level): must be one of error, warn, info, debug, got "verbose"');
  });
});

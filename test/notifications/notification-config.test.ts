import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';
import { toolkitDir } from '../support/toolkit-files.js';

const sinks = [{ name: 'hooks', url: 'http://127.0.0.1:9/hooks', format: 'standard-webhooks', secret: { secret: 'env:NOTIFY_CONFIG_KEY' } }];
const job = { method: 'POST', type: 'exec', command: ['/bin/true'], run: 'async' };

/** Sinks and notify rules are checked as configuration (docs/notifications.md): every problem names its key. */
describe('notifications: sinks and rules as configuration', function () {
  this.timeout(60_000);
  const dbFile = () => ({ client: 'sqlite', filename: path.join(tempDir('tkgate-notify-config-'), 'tkgate.sqlite') });

  it('config check: a rule naming a missing sink (with the nearest name), notify on an endpoint that is not a job, an unknown event', async () => {
    const toolkits = toolkitDir({
      'ops.yaml': {
        name: 'ops',
        type: 'app',
        endpoints: [
          { path: 'a', ...job, notify: [{ on: ['run.failed'], sink: 'hook' }] },
          { path: 'b', ...job, run: 'sync', notify: [{ on: ['run.failed'], sink: 'hooks' }] },
          { path: 'c', ...job, notify: [{ on: ['run.exploded'], sink: 'hooks' }] },
        ],
      },
    });
    const config = writeConfig({ db: dbFile(), notifications: { sinks } });
    const result = await runCli(['config', 'check', toolkits, '--config', config], { env: { NOTIFY_CONFIG_KEY: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } });
    const text = result.stdout + result.stderr;
    expect(result.code, text).to.not.equal(0);
    expect(text).to.include('endpoints.0.notify.0.sink').and.include('no sink hook in notifications.sinks').and.include('did you mean hooks?');
    expect(text).to.include('endpoints.1.notify').and.include('only for endpoints that run as jobs');
    expect(text).to.include('endpoints.2.notify.0.on.0');
  });

  it('a sink without its signing secret, or with a bad URL, is refused naming the key', async () => {
    const noSecret = writeConfig({ db: dbFile(), notifications: { sinks: [{ name: 'hooks', url: 'http://127.0.0.1:9/', format: 'standard-webhooks' }] } });
    const first = await runCli(['config', 'check', toolkitDir({}), '--config', noSecret]);
    expect(first.code).to.not.equal(0);
    expect(first.stderr).to.include('notifications.sinks.0.secret');
    const badUrl = writeConfig({ db: dbFile(), notifications: { sinks: [{ ...sinks[0], url: 'ftp://x' }] } });
    const second = await runCli(['config', 'check', toolkitDir({}), '--config', badUrl]);
    expect(second.code).to.not.equal(0);
    expect(second.stderr).to.include('notifications.sinks.0.url');
  });

  it('start refuses a secret reference it cannot open and a key that is not whsec_ base64, naming the key and never a value', async () => {
    const config = writeConfig({ db: dbFile(), notifications: { sinks } });
    const missing = await runCli(['start', '--config', config], { env: {} });
    expect(missing.code).to.not.equal(0);
    expect(missing.stderr).to.include('notifications.sinks.0.secret').and.include('NOTIFY_CONFIG_KEY');
    const bad = await runCli(['start', '--config', config], { env: { NOTIFY_CONFIG_KEY: 'not-a-key-3f1d' } });
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.include('notifications.sinks.0.secret').and.include('whsec_');
    expect(bad.stderr + bad.stdout).not.to.include('not-a-key-3f1d');
  });
});

import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { writeConfig } from '../support/gateway-process.js';
import { tempDir } from '../support/paths.js';

/** The plugin's transport options (docs/configuration.md): every combination starts; anything else is refused by name. */
describe('plugin-http transport options', () => {
  const configWith = (options: Record<string, unknown>) =>
    writeConfig({
      db: { client: 'sqlite', filename: `${tempDir()}/tkgate.sqlite` },
      toolkits: { dir: tempDir('tkgate-toolkits-'), watch: false },
      plugins: ['@tkgate/plugin-http'],
      plugin_options: { '@tkgate/plugin-http': options },
    });

  it('config check accepts every transport with either http_passthrough', async () => {
    for (const transport of ['undici', 'reader'])
      for (const passthrough of ['reader', 'transport']) {
        const options = { transport, http_passthrough: passthrough };
        const result = await runCli(['config', 'check', '--config', configWith(options)]);
        expect(result.code, `${JSON.stringify(options)}: ${result.stderr}`).to.equal(0);
      }
  });

  it('config check refuses transport: got by name (got is no longer a proxy transport), naming the choices', async () => {
    const result = await runCli(['config', 'check', '--config', configWith({ transport: 'got' })]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('plugin_options.@tkgate/plugin-http.transport');
    expect(result.stderr).to.include('got is no longer a transport of the http type: choose undici (the default) or reader');
  });

  it('config check refuses an unknown http_passthrough, naming the key and the choices', async () => {
    const result = await runCli(['config', 'check', '--config', configWith({ http_passthrough: 'curl' })]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('plugin_options.@tkgate/plugin-http.http_passthrough');
    expect(result.stderr).to.match(/reader.*transport/);
  });
});

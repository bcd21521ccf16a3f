// Peer: Caddy's reverse_proxy (no auth), when Caddy is installed (Debian package caddy).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { commandInstalled, startProcess } from '../processes.js';

export const caddyInstalled = () => commandInstalled('caddy', ['version']);

export function startCaddy(dir, port, upstreamPort) {
  const caddyfile = path.join(dir, 'Caddyfile');
  writeFileSync(caddyfile, `{\n\tadmin off\n\tauto_https off\n}\nhttp://127.0.0.1:${port} {\n\treverse_proxy 127.0.0.1:${upstreamPort}\n}\n`);
  return startProcess('caddy', ['run', '--config', caddyfile, '--adapter', 'caddyfile'], {
    port,
    env: { HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    timeoutMs: 10_000,
  });
}

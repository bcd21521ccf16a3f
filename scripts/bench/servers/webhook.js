// Baseline: adnanh/webhook running the same script as the exec endpoint, when installed (Debian package webhook).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { commandInstalled, startProcess } from '../processes.js';

export const webhookInstalled = () => commandInstalled('webhook', ['-version']);

export function startWebhook(dir, port, script) {
  const hooks = path.join(dir, 'hooks.json');
  writeFileSync(hooks, JSON.stringify([{ id: 'tiny', 'execute-command': script, 'include-command-output-in-response': true }]));
  return startProcess('webhook', ['-hooks', hooks, '-ip', '127.0.0.1', '-port', String(port)], { port });
}

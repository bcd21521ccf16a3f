// Scenario 18 of run.js: what a signed call (a GitHub push, `trigger: { verify: github }`, docs/triggers.md) costs
// the gateway against the same call of the same endpoint with an API key of the `as` user, on one gateway of its
// own. The endpoint is scenario 3's http endpoint (JSON context POST to the upstream); the body a push event of
// about 2 KB. No X-GitHub-Delivery: every call is a first delivery (a redelivery is an INSERT and a read).
import { createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { apiKey, BENCH_USER, login, startTkgate } from './tkgate.js';

const SECRET = 'bench-hook-secret-2c9f41';

const pushBody = JSON.stringify({
  ref: 'refs/heads/main',
  before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
  after: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
  repository: { id: 186853002, name: 'app', full_name: 'acme/app', private: false, html_url: 'https://github.com/acme/app', default_branch: 'main' },
  pusher: { name: 'octocat', email: '21031067+octocat@users.noreply.github.com' },
  sender: { login: 'octocat', id: 583231, type: 'User', site_admin: false },
  commits: Array.from({ length: 4 }, (_, i) => ({
    id: `0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1${i}`,
    message: `Change ${i + 1} of the login redirect`,
    timestamp: '2019-05-15T15:20:30Z',
    author: { name: 'The Octocat', email: '21031067+octocat@users.noreply.github.com', username: 'octocat' },
    added: [],
    removed: [],
    modified: ['src/login.ts', 'src/redirect.ts'],
  })),
});

/** Rows for the scenario (the signed call's first: the goal is its CPU per call against the key's), and a stop function. */
export async function triggerRows({ dir, config, upstreamPort, row, track }) {
  const toolkits = path.join(dir, 'toolkits-triggers');
  mkdirSync(toolkits, { recursive: true });
  writeFileSync(
    path.join(toolkits, 'hooks.json'),
    JSON.stringify({
      name: 'hooks',
      type: 'app',
      endpoints: [
        {
          path: 'push',
          method: 'POST',
          type: 'http',
          upstream: { url: `http://127.0.0.1:${upstreamPort}/json` },
          trigger: { verify: 'github', secret: { secret: 'env:BENCH_HOOK_SECRET' }, as: BENCH_USER.username },
        },
      ],
    }),
  );
  const written = JSON.parse(readFileSync(config, 'utf8'));
  written.toolkits = { ...written.toolkits, dir: toolkits };
  const withTriggers = config.replace(/\.json$/, '-triggers.json');
  writeFileSync(withTriggers, JSON.stringify(written, null, 2));
  const gateway = track(await startTkgate(withTriggers, [], { BENCH_HOOK_SECRET: SECRET }));
  const key = await apiKey(gateway.base, await login(gateway.base));
  const signature = `sha256=${createHmac('sha256', SECRET).update(pushBody).digest('hex')}`;
  const push = (headers) => ({ url: '/tk/app/hooks/push', method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: pushBody });
  return {
    rows: [
      row('signed (github)', gateway, push({ 'x-github-event': 'push', 'x-hub-signature-256': signature })),
      row('API key', gateway, push({ authorization: `Bearer ${key}` })),
    ],
    stop: () => gateway.stop(),
  };
}

// The two relays of scenarios 16 and 17: tkgate with one `websocket: true` endpoint (a gateway of its own, on the
// bench's database and user) and a bare `ws` relay (servers/ws-relay.js, no auth), both to one `ws` echo upstream.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { login, startTkgate } from './tkgate.js';

/**
 * The bench gateway's config with one idle WebSocket endpoint (tk/app/dash/live) to the upstream at
 * `upstreamPort`; `maxPerUser` is websocket.max_per_user, `name` keeps each scenario's files apart.
 */
export function websocketConfig(dir, config, upstreamPort, maxPerUser, name = 'websockets') {
  const toolkits = path.join(dir, `${name}-toolkits`);
  mkdirSync(toolkits, { recursive: true });
  // Sockets idle for a while (scenario 16's settling, scenario 17's other target's turn) stay open.
  const endpoint = {
    path: 'live',
    method: 'GET',
    type: 'http',
    websocket: true,
    idle_timeout: '1h',
    upstream: { url: `ws://127.0.0.1:${upstreamPort}/live` },
  };
  writeFileSync(path.join(toolkits, 'dash.json'), JSON.stringify({ name: 'dash', type: 'app', endpoints: [endpoint] }));
  const written = JSON.parse(readFileSync(config, 'utf8'));
  written.toolkits = { ...written.toolkits, dir: toolkits };
  written.websocket = { max_per_user: maxPerUser };
  const file = config.replace(/\.json$/, `-${name}.json`);
  writeFileSync(file, JSON.stringify(written, null, 2));
  return file;
}

/**
 * Starts them; `name` keeps each scenario's toolkits and config apart, `maxPerUser` is websocket.max_per_user,
 * `nodeArgs` go to both relays' node (not the upstream's). Resolves to { gateway, relay, tkgateUrl, relayUrl, auth, stop }.
 */
export async function startWebsocketRelays({ dir, config, name, maxPerUser, track, startServer, nodeArgs = [] }) {
  const upstream = await startServer('ws-upstream.js');
  const relay = await startServer('ws-relay.js', { UPSTREAM_PORT: String(upstream.port) }, nodeArgs);
  const file = websocketConfig(dir, config, upstream.port, maxPerUser, name);
  const gateway = track(await startTkgate(file, nodeArgs));
  const stop = async () => {
    await gateway.stop();
    await relay.stop();
    await upstream.stop();
  };
  try {
    const auth = { authorization: `Bearer ${await login(gateway.base)}` };
    const tkgateUrl = `${gateway.base.replace(/^http/, 'ws')}/tk/app/dash/live`;
    return { gateway, relay, tkgateUrl, relayUrl: `ws://127.0.0.1:${relay.port}/live`, auth, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

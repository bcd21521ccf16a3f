// Scenario 14 of run.js: what path templates cost the router. Two gateways on the bench database, each with 500
// toolkits of three http endpoints: one declares literal paths (hosts/web-1, hosts/web-1/services/api,
// files/a/b), the other the same paths as templates (hosts/{host}, hosts/{host}/services/{service}, files/*).
// Both are asked the same URL, so the rows differ only in how the path was matched (and path_params).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { login, startTkgate } from './tkgate.js';

const TOOLKITS = 500;

function toolkitsDir(dir, name, upstreamPort, paths) {
  const toolkits = path.join(dir, name);
  mkdirSync(toolkits, { recursive: true });
  const upstream = { url: `http://127.0.0.1:${upstreamPort}/json` };
  for (let i = 0; i < TOOLKITS; i++) {
    const endpoints = paths.map((each) => ({ path: each, method: 'GET', type: 'http', upstream }));
    writeFileSync(path.join(toolkits, `t${i}.json`), JSON.stringify({ name: `t${i}`, type: 'app', endpoints }));
  }
  return toolkits;
}

async function gatewayWith(config, toolkits, suffix, track) {
  const written = JSON.parse(readFileSync(config, 'utf8'));
  written.toolkits = { ...written.toolkits, dir: toolkits };
  const file = config.replace(/\.json$/, `-${suffix}.json`);
  writeFileSync(file, JSON.stringify(written, null, 2));
  const gateway = track(await startTkgate(file));
  return { gateway, auth: { authorization: `Bearer ${await login(gateway.base)}` } };
}

/** Rows for the scenario (templates first: the goal is their CPU per request against exact paths), and a stop function. */
export async function pathTemplateRows({ dir, config, upstreamPort, row, track }) {
  const exact = await gatewayWith(
    config,
    toolkitsDir(dir, 'exact-paths', upstreamPort, ['hosts/web-1', 'hosts/web-1/services/api', 'files/a/b']),
    'exact',
    track,
  );
  const templates = await gatewayWith(
    config,
    toolkitsDir(dir, 'template-paths', upstreamPort, ['hosts/{host}', 'hosts/{host}/services/{service}', 'files/*']),
    'templates',
    track,
  );
  const url = `/tk/app/t${TOOLKITS / 2}/hosts/web-1/services/api`;
  return {
    rows: [
      row(`templates (${TOOLKITS} toolkits)`, templates.gateway, { url, headers: templates.auth }),
      row(`exact paths (${TOOLKITS} toolkits)`, exact.gateway, { url, headers: exact.auth }),
    ],
    stop: async () => {
      await exact.gateway.stop();
      await templates.gateway.stop();
    },
  };
}

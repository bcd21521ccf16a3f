// The peer gateways (fast-gateway, express-gateway) live in bench/peers with their own lockfile, so the
// main install never carries them; the bench installs them there on first use.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const peersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bench/peers');

/** Installs the peers (npm ci, no install scripts) unless they are there; returns whether they are usable. */
export function ensurePeersInstalled(log) {
  if (existsSync(path.join(peersDir, 'node_modules/fast-gateway')) && existsSync(path.join(peersDir, 'node_modules/express-gateway'))) return true;
  log('installing the peer gateways into bench/peers (first run only)\n');
  try {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', '--loglevel=error'], {
      cwd: peersDir,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 300_000,
    });
    return true;
  } catch (err) {
    log(`peer gateways not installed (${err.message.split('\n')[0]}); their rows are skipped\n`);
    return false;
  }
}

/** `require` resolving from bench/peers, for the peer servers. */
export const requirePeer = createRequire(path.join(peersDir, 'package.json'));

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ServerConfig } from '../config/server-config.js';
import type { GatewayMiddleware } from '../http/context.js';
import type { RouteContribution } from '../http/routes.js';
import type { Logger } from '../log.js';

/**
 * The web console (docs/console.md): the static files of `@tkgate/console`'s build, served at
 * `{base}/console/`. The files are read once at start into memory and each is a fixed route of its own, so a
 * request names a file the build made or gets the router's 404: no path is ever joined from a request (no
 * traversal), and nothing else on the request path costs anything. Where the built files are: the
 * `consoleDir` start option, else `dist/public` of the `@tkgate/console` package as Node resolves it from core
 * (the CLI depends on it; a release ships it next to core). Not found: the console is off, with a warning.
 */

export interface ConsoleServices {
  config: ServerConfig;
  log: Logger;
  /** The built files (index.html and the hashed assets); undefined: resolve `@tkgate/console`. */
  consoleDir?: string | undefined;
}

/** `default-src 'self'`: scripts and styles only from the gateway's files, never inline or eval'd. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

/** A built asset's name carries its content hash (`app-3FJ2K7QX.js`): cached for a year. */
const HASHED = /-[A-Z0-9]{8}\.[a-z]+$/;

interface ConsoleFile {
  body: Buffer;
  type: string;
  cache: string;
}

/** The directory of the built console, or undefined when there is none. */
export function builtConsoleDir(given: string | undefined): string | undefined {
  if (given !== undefined) return given;
  try {
    const manifest = createRequire(import.meta.url).resolve('@tkgate/console/package.json');
    return path.join(path.dirname(manifest), 'dist/public');
  } catch {
    return undefined;
  }
}

function readBuild(dir: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const type = TYPES[path.extname(name)];
    if (!type || !statSync(file).isFile()) continue;
    const cache = HASHED.test(name) ? 'public, max-age=31536000, immutable' : 'no-cache';
    files.set(name, { body: readFileSync(file), type, cache });
  }
  return files;
}

function serve(file: ConsoleFile): GatewayMiddleware {
  return (ctx) => {
    ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Cache-Control', file.cache);
    ctx.type = file.type;
    ctx.body = file.body;
  };
}

/**
 * GET {base}/console/ (index.html, never cached), {base}/console/<hashed asset> (immutable) and
 * {base}/console/config.json (the sign-in methods: the OIDC providers' names). Nothing when console.enabled is
 * false or the build is missing.
 */
export function consoleRoutes(services: ConsoleServices): RouteContribution {
  const { config, log } = services;
  if (!config.console.enabled) return () => undefined;
  const dir = builtConsoleDir(services.consoleDir);
  let files: Map<string, ConsoleFile> | undefined;
  try {
    if (dir) files = readBuild(dir);
  } catch {
    files = undefined;
  }
  const index = files?.get('index.html');
  if (!files || !index) {
    log.warn('console not served: its build is missing (npm ci builds packages/console)', { dir: dir ?? '@tkgate/console not found' });
    return () => undefined;
  }
  const providers = JSON.stringify({ providers: config.auth.oidc.providers.map((provider) => ({ name: provider.name })) });
  const settings: ConsoleFile = { body: Buffer.from(providers), type: 'application/json', cache: 'no-cache' };
  return ({ base, add }) => {
    const serveIndex = serve(index);
    // The page's relative asset URLs need the trailing slash: {base}/console answers with a redirect to it.
    add('GET', `${base}/console`, 'console', (ctx, next) => {
      if (ctx.path.endsWith('/')) return serveIndex(ctx, next);
      ctx.status = 301;
      ctx.redirect(`${base}/console/`);
    });
    add('GET', `${base}/console/config.json`, 'console/config.json', serve(settings));
    for (const [name, file] of files) if (name !== 'index.html') add('GET', `${base}/console/${name}`, 'console/asset', serve(file));
  };
}

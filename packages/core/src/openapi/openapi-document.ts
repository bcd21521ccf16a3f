import { createRequire } from 'node:module';
import type { JsonSchema } from '../plugins/response-description.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import type { ToolkitSnapshot } from '../toolkits/toolkit-registry.js';
import { adminPaths } from './admin-paths.js';
import { apiKeyPaths } from './api-key-paths.js';
import { authPaths, LOGIN_DATA } from './auth-paths.js';
import { components } from './envelope-schemas.js';
import { oidcPaths } from './oidc-paths.js';
import { toolkitPaths } from './toolkit-paths.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

export interface DocumentOptions {
  /** server.base_url: the document's server. */
  baseUrl: string;
  /** server.max_body_bytes. */
  maxBodyBytes: number;
  /** The caller's power: only endpoints it reaches are described. Absent: every endpoint (`tkgate openapi`). */
  power?: number;
  /** auth.admin_power: clear-sessions and the audit trail are described for callers who reach it. */
  adminPower: number;
  /** Only this toolkit (`tkgate openapi --toolkit NAME`). */
  toolkit?: string;
  /** Whether single sign-on routes are served (auth.oidc.providers is not empty). */
  oidc?: boolean;
  /**
   * The caller is an API key with this scope (null: every toolkit): only those toolkits are described, and
   * none of the routes only a session may use (logout, clear-sessions, the key routes). Absent: a session.
   */
  apiKeyScope?: ReadonlySet<string> | null;
}

/**
 * The OpenAPI 3.1 description (docs/browsers-and-editors.md, "OpenAPI 3.1"), built from one toolkit snapshot: the auth endpoints and
 * every endpoint of an enabled toolkit that the caller's power reaches.
 */
export function openApiDocument(snapshot: ToolkitSnapshot, options: DocumentOptions): JsonSchema {
  const { power } = options;
  const reaches = power === undefined ? () => true : (endpoint: CompiledEndpoint) => power >= endpoint.minPower;
  const session = options.apiKeyScope === undefined;
  const inScope = (name: string) => !options.apiKeyScope || options.apiKeyScope.has(name);
  const toolkits = [...snapshot.values()]
    .filter((toolkit) => toolkit.enabled && (options.toolkit === undefined || toolkit.name === options.toolkit) && inScope(toolkit.name))
    .sort((a, b) => a.name.localeCompare(b.name));
  // The admin routes answer sessions only, like the key routes.
  const admin = session && (power === undefined || power >= options.adminPower);
  const paths = authPaths({ maxBodyBytes: options.maxBodyBytes, admin: power === undefined || power >= options.adminPower, session });
  if (session) Object.assign(paths, apiKeyPaths(options.maxBodyBytes));
  if (options.oidc) Object.assign(paths, oidcPaths(options.maxBodyBytes, LOGIN_DATA));
  const tags: JsonSchema[] = [{ name: 'auth', description: 'Sessions: log in, log out, status.' }];
  if (admin) {
    Object.assign(paths, adminPaths());
    tags.push({ name: 'admin', description: 'For callers with auth.admin_power: the audit trail.' });
  }
  for (const toolkit of toolkits) {
    const own = toolkitPaths(toolkit, { maxBodyBytes: options.maxBodyBytes, reaches });
    if (Object.keys(own).length === 0) continue;
    Object.assign(paths, own);
    tags.push({ name: toolkit.name, description: toolkit.description ?? `The ${toolkit.kind} toolkit ${toolkit.name}.` });
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'tkgate',
      version,
      description: 'Session authentication and toolkit endpoints. Every answer is JSON in one envelope, except passthrough downloads.',
    },
    servers: [{ url: options.baseUrl || '/' }],
    security: [{ bearerAuth: [] }],
    tags,
    paths,
    components,
  };
}

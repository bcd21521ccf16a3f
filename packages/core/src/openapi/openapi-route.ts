import type { JwtIssuers } from '../auth/jwt/jwt-issuers.js';
import type { ApiKeyStore } from '../api-keys/api-key-store.js';
import { authenticateSessionOrKey, machineScope, type AuthenticatedState } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import type { GatewayMiddleware } from '../http/context.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { SessionStore } from '../sessions/session-store.js';
import type { ToolkitRegistry, ToolkitSnapshot } from '../toolkits/toolkit-registry.js';
import type { UserDirectory } from '../users/user-directory.js';
import { toolkitFileJsonSchema } from '../toolkits/toolkit-json-schema.js';
import { openApiDocument } from './openapi-document.js';

export interface OpenApiServices {
  config: ServerConfig;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  jwtIssuers: JwtIssuers;
  users: UserDirectory;
  registry: ToolkitRegistry;
}

/**
 * The documents of one snapshot, by what a power reaches: callers whose power passes the same min_power
 * thresholds (and auth.admin_power or not) see the same document, so there are at most a few per snapshot,
 * times the distinct scopes of the API keys that ask (bounded: past MAX_DOCUMENTS they are made again).
 * Keyed weakly by the snapshot: a reload makes a new one, and the old documents go with it.
 */
class DocumentCache {
  private readonly bySnapshot = new WeakMap<ToolkitSnapshot, { thresholds: number[]; documents: Map<string, string> }>();

  constructor(private readonly config: ServerConfig) {}

  documentFor(snapshot: ToolkitSnapshot, power: number, apiKeyScope: ReadonlySet<string> | null | undefined): string {
    let entry = this.bySnapshot.get(snapshot);
    if (!entry) this.bySnapshot.set(snapshot, (entry = { thresholds: thresholdsOf(snapshot), documents: new Map() }));
    const credential = apiKeyScope === undefined ? 'session' : `key:${apiKeyScope === null ? '*' : [...apiKeyScope].sort().join(',')}`;
    const key = `${entry.thresholds.filter((threshold) => power >= threshold).length}:${power >= this.config.auth.admin_power}:${credential}`;
    let document = entry.documents.get(key);
    if (document === undefined) {
      if (entry.documents.size >= MAX_DOCUMENTS) entry.documents.clear();
      const options = {
        baseUrl: this.config.server.base_url,
        maxBodyBytes: this.config.server.max_body_bytes,
        adminPower: this.config.auth.admin_power,
        oidc: this.config.auth.oidc.providers.length > 0,
        power,
        ...(apiKeyScope === undefined ? {} : { apiKeyScope }),
      };
      entry.documents.set(key, (document = JSON.stringify(openApiDocument(snapshot, options))));
    }
    return document;
  }
}

const MAX_DOCUMENTS = 1_000;

function thresholdsOf(snapshot: ToolkitSnapshot): number[] {
  const powers = new Set<number>();
  for (const toolkit of snapshot.values())
    for (const byMethod of toolkit.routes.values()) for (const endpoint of byMethod.values()) powers.add(endpoint.minPower);
  return [...powers];
}

/**
 * GET {base}/openapi.json: the description for the caller, from the live snapshot (it follows reloads);
 * GET {base}/toolkit.schema.json: the JSON Schema of toolkit files for the loaded plugins.
 */
export function openApiRoutes(services: OpenApiServices): RouteContribution {
  const cache = new DocumentCache(services.config);
  const document: Stage<AuthenticatedState> = (ctx) => {
    ctx.body = cache.documentFor(services.registry.snapshot, ctx.state.caller.power, machineScope(ctx.state));
    ctx.type = 'application/json';
  };
  const chain = StageList.start()
    .then('authenticate', authenticateSessionOrKey(services, { countsAsUse: true }))
    .then('document', document);
  // The toolkit JSON Schema, for editors pointed at a deployed gateway (docs/toolkits.md). Without a session:
  // an editor's schema fetch sends no credentials, and it says no more than `tkgate schema` run anywhere with
  // the same plugins. The plugins are fixed at boot, so it is made once.
  let schema: string | undefined;
  const toolkitSchema: GatewayMiddleware = (ctx) => {
    ctx.body = schema ??= JSON.stringify(toolkitFileJsonSchema(services.registry.types), null, 2);
    ctx.type = 'application/schema+json';
  };
  return ({ base, add }) => {
    add('GET', `${base}/openapi.json`, 'openapi.json', ...chain.middleware);
    add('GET', `${base}/toolkit.schema.json`, 'toolkit.schema.json', toolkitSchema);
  };
}

import { authenticateSessionOrKey, type AuthenticatedState, type CredentialStores } from '../auth/authenticate.js';
import { forbidden } from '../errors.js';
import { sendData } from '../http/envelope.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import type { PluginRoute } from '../plugins/plugin-api.js';

/**
 * The routes plugins added (PluginApi.registerRoute, docs/plugins.md): `GET {base}/<path>`, authenticated as the
 * runs' routes are (a session or an API key), below the route's power 403 `forbidden`, the handler's result as `data`.
 */
export function pluginRoutes(routes: ReadonlyArray<PluginRoute & { plugin: string }>, stores: CredentialStores): RouteContribution {
  const authenticate = authenticateSessionOrKey(stores, { countsAsUse: true });
  return ({ base, add }) => {
    for (const route of routes) {
      const handle: Stage<AuthenticatedState> = async (ctx) => {
        const { caller } = ctx.state;
        if (caller.power < route.minPower()) throw forbidden(`${route.path} needs power ${route.minPower()}`);
        const query: Record<string, string> = {};
        for (const [key, value] of Object.entries(ctx.query)) {
          const first = Array.isArray(value) ? value[0] : value;
          if (first !== undefined) query[key] = first;
        }
        sendData(ctx, await route.handle({ query, caller: { id: caller.id, username: caller.username, power: caller.power }, requestId: ctx.state.requestId }));
      };
      add('GET', `${base}/${route.path}`, route.path, ...StageList.start().then('authenticate', authenticate).then(route.plugin, handle).middleware);
    }
  };
}

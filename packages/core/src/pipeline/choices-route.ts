import { parse as parseQuery } from 'node:querystring';
import compose from 'koa-compose';
import { authenticateSessionOrKey, type AuthenticatedState } from '../auth/authenticate.js';
import { invalidPayload, notFound } from '../errors.js';
import type { GatewayContext, GatewayMiddleware, GatewayState } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import type { RouteContribution } from '../http/routes.js';
import { StageList, type Stage } from '../http/stage.js';
import { choiceArgs } from '../parameters/index.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import type { AddressedState, EndpointFound, ToolkitFound } from './pipeline-state.js';
import { toolkitStep } from './step-1-toolkit.js';
import { permissionStep } from './step-3-permission.js';
import { asCaller } from './step-4-payload-filter.js';
import type { PipelineServices } from './toolkit-pipeline.js';

/** The methods whose endpoint's field is looked for, in this order: a form's GET, then its POST, then the rest. */
const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

type ChoicesState = AddressedState & AuthenticatedState & ToolkitFound & EndpointFound;

/**
 * GET {base}/choices/{toolkit}/{endpoint path}?field=<field>&<arg>=<value>...: the choices a field with choices_from
 * offers this caller, `{"choices": [{value, label}]}`, as step 4 would check them (the same cache). The toolkit,
 * endpoint and permission are steps 1-3's (404, 403); the args' keys are query parameters (docs/toolkits.md).
 */
export function choicesRoutes(
  s: Pick<PipelineServices, 'registry' | 'sessions' | 'apiKeys' | 'jwtIssuers' | 'internalCalls' | 'fieldChoices'>,
): RouteContribution {
  const authenticate = authenticateSessionOrKey(s, { countsAsUse: true });
  const answer: Stage<ChoicesState> = async (ctx) => {
    const query = parseQuery(ctx.querystring);
    const field = typeof query.field === 'string' ? query.field : undefined;
    if (!field) throw invalidPayload([{ field: 'field', rule: 'required', message: 'field is required: the name of a field with choices_from' }]);
    const rule = ctx.state.endpoint.clientFilter.fieldRules.get(field)?.choicesFrom;
    if (!rule) throw invalidPayload([{ field: 'field', rule: 'choices_from', message: `${ctx.state.endpoint.path} has no field ${field} with choices_from` }]);
    const values = Object.fromEntries(Object.entries(query).flatMap(([name, value]) => (typeof value === 'string' ? [[name, value]] : [])));
    // The args by their own names: the choices call's fields.
    const named = { ...rule, args: rule.args.map(([name, arg]) => [name, 'field' in arg ? { field: name } : arg] as const) };
    const args = choiceArgs(named, values);
    if ('missing' in args)
      throw invalidPayload([{ field: args.missing, rule: 'required', message: `${args.missing} is required: ${field}'s choices depend on it` }]);
    const choices = await s.fieldChoices.choices(ctx.state.toolkit, field, rule, args.args, { ...asCaller(ctx.state), requestId: ctx.state.requestId });
    sendData(ctx, { choices });
  };
  const chain = compose(
    StageList.start<AddressedState>()
      .then('authenticate', authenticate)
      .then('toolkit', toolkitStep(s.registry))
      .then('endpoint', endpointStep)
      .then('permission', permissionStep)
      .then('choices', answer).middleware as GatewayMiddleware[],
  );
  return ({ base, pattern }) => {
    const prefix = `${base}/choices/`;
    const route: GatewayMiddleware = (ctx, next) => {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
      const rest = ctx.path.slice(prefix.length);
      const cut = rest.indexOf('/');
      if (cut <= 0 || cut === rest.length - 1) return next();
      const name = rest.slice(0, cut);
      ctx.state.route = 'choices';
      // Toolkit names are unique across kinds: the address takes the live toolkit's kind (step 1 checks it is enabled).
      const kind = s.registry.snapshot.get(name)?.kind ?? 'app';
      // A template's path as written: a browser sends its braces percent-encoded.
      const endpointPath = rest
        .slice(cut + 1)
        .replace(/\/$/, '')
        .replace(/%7B/gi, '{')
        .replace(/%7D/gi, '}');
      (ctx.state as GatewayState & AddressedState).address = { kind, toolkit: name, endpointPath };
      return chain(ctx);
    };
    pattern(new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^/]+/[^/]`), route);
  };
}

/** Step 2 for an exact path: the endpoint of the path whose field has choices_from, GET's first (404 endpoint_not_found). */
const endpointStep: Stage<AddressedState & ToolkitFound, EndpointFound> = (ctx, next) => {
  const { toolkit, address } = ctx.state;
  const byMethod = toolkit.routes.get(address.endpointPath);
  if (!byMethod) throw notFound('endpoint_not_found', `the toolkit ${toolkit.name} has no endpoint ${address.endpointPath}`);
  const field = parseQuery(ctx.querystring).field;
  const endpoints = METHOD_ORDER.flatMap((method) => byMethod.get(method) ?? []);
  const endpoint: CompiledEndpoint =
    endpoints.find((each) => typeof field === 'string' && each.clientFilter.fieldRules.get(field)?.choicesFrom) ??
    endpoints[0] ??
    byMethod.values().next().value!;
  (ctx.state as GatewayContext<AddressedState & ToolkitFound & EndpointFound>['state']).endpoint = endpoint;
  return next();
};

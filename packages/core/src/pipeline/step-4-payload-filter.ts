import { invalidPayload } from '../errors.js';
import type { GatewayContext, GatewayState } from '../http/context.js';
import { asPayloadObject, hasBody, readPayloadBody } from '../http/payload-body.js';
import { parseTextFields } from '../http/payload-parsers.js';
import type { Stage } from '../http/stage.js';
import { applyClientFilter, applyPathRules } from '../toolkits/client-filter.js';
import { decodePathParams } from '../toolkits/path-templates.js';
import type { EndpointFound, PayloadFiltered } from './pipeline-state.js';

type FilteringState = GatewayState & EndpointFound;

/** The server's bounds on any request body (server.max_body_bytes, server.body_timeout). */
interface BodyLimits {
  max_body_bytes: number;
  body_timeout_ms: number;
}

/**
 * Step 4: a template endpoint's path parameters (path_rules, each failure naming `path.<name>`), then the payload —
 * the query string for GET (and HEAD, OPTIONS, a DELETE without a body), the body otherwise (read here and no earlier) —
 * filtered by client_filter: fields not allowed are stripped, every other failure is 400 invalid_payload
 * naming each field and rule. The payload is an object without prototype, and prototype key names
 * (`__proto__`, `constructor`, `prototype`) are refused wherever they appear.
 */
export function payloadFilterStep(server: BodyLimits): Stage<FilteringState, PayloadFiltered> {
  return (ctx, next) => {
    if (ctx.state.endpoint.template) filterPath(ctx);
    // node:querystring, not Koa's ctx.query (URLSearchParams), which cost a GET endpoint dearly
    // (docs/performance.md, "Reads on the request path").
    if (ctx.method === 'GET' || takesQuery(ctx)) {
      filterPayload(ctx, parseTextFields(ctx.querystring), 'text-fields');
      return next();
    }
    const filter = ctx.state.endpoint.clientFilter;
    const limits = {
      endpointMax: filter.maxBodyBytes,
      serverMax: server.max_body_bytes,
      allowedContentTypes: filter.allowedContentTypes,
      timeoutMs: server.body_timeout_ms,
    };
    return readPayloadBody(ctx, limits).then(({ body, form, text, raw }) => {
      filterPayload(ctx, asPayloadObject(body), form ? 'text-fields' : 'json');
      const state = ctx.state as FilteringState & PayloadFiltered;
      state.bodyRead = text !== undefined || raw !== undefined;
      if (form) state.formText = text;
      if (raw) state.rawBody = raw;
      return next();
    });
  };
}

/** A template endpoint's path parameters, decoded and checked (path_rules) before the payload is read. */
function filterPath(ctx: GatewayContext<FilteringState>): void {
  const { endpoint, pathMatch } = ctx.state;
  const { params, problems } = decodePathParams(endpoint.template!, pathMatch ?? { values: [], remainder: '' });
  if (problems.length > 0) throw invalidPayload(problems);
  const ruleProblems = endpoint.clientFilter.pathRules.size > 0 ? applyPathRules(endpoint.clientFilter, params) : [];
  if (ruleProblems.length > 0) throw invalidPayload(ruleProblems);
  (ctx.state as FilteringState & PayloadFiltered).pathParams = params;
}

/** HEAD and OPTIONS, and a DELETE without a body, take their payload from the query string as GET does. */
const takesQuery = (ctx: GatewayContext<FilteringState>): boolean =>
  ctx.method === 'HEAD' || ctx.method === 'OPTIONS' || (ctx.method === 'DELETE' && !hasBody(ctx));

function filterPayload(ctx: GatewayContext<FilteringState>, input: Record<string, unknown>, from: 'text-fields' | 'json'): void {
  const { payload, problems } = applyClientFilter(ctx.state.endpoint.clientFilter, input, from);
  if (problems.length > 0) throw invalidPayload(problems);
  (ctx.state as FilteringState & PayloadFiltered).payload = payload;
}

import type { Next } from 'koa';
import type { AuthenticatedState } from '../auth/authenticate.js';
import type { InternalCaller } from '../auth/internal-calls.js';
import { invalidPayload, type FieldProblem } from '../errors.js';
import type { GatewayContext, GatewayState } from '../http/context.js';
import { choiceArgs, holdSecretValues, isChoice, type FieldChoices } from '../parameters/index.js';
import type { SecretMask } from '../secrets/secret-mask.js';
import { asPayloadObject, hasBody, readPayloadBody } from '../http/payload-body.js';
import { parseTextFields } from '../http/payload-parsers.js';
import type { Stage } from '../http/stage.js';
import { applyClientFilter, applyPathRules } from '../toolkits/client-filter.js';
import { decodePathParams } from '../toolkits/path-templates.js';
import type { EndpointFound, PayloadFiltered, PrereadBody, ToolkitFound, TriggerCalled } from './pipeline-state.js';

type FilteringState = GatewayState & AuthenticatedState & ToolkitFound & EndpointFound & TriggerCalled;

/** What fields with choices_from and secret fields need (parameters/). */
export interface FieldParameters {
  choices: FieldChoices<InternalCaller>;
  mask: SecretMask;
}

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
 * (`__proto__`, `constructor`, `prototype`) are refused wherever they appear. A signed call's body was read by the
 * trigger stage, which checked its signature on the bytes and mapped it (payload_map): it is filtered, not read again.
 */
export function payloadFilterStep(server: BodyLimits, parameters: FieldParameters): Stage<FilteringState, PayloadFiltered> {
  // Not async: an endpoint without choices_from or secret fields goes on without a promise of its own.
  const filtered = (ctx: GatewayContext<FilteringState>, next: Next): unknown => {
    const { choiceFields, secretFields } = ctx.state.endpoint.clientFilter;
    // Held until the answer is out (a sync command's output, an error answer are masked before), then among the recent.
    if (secretFields) ctx.res.once('close', holdSecretValues(secretFields, (ctx.state as FilteringState & PayloadFiltered).payload, parameters.mask));
    return choiceFields ? checkChoices(ctx, parameters.choices).then(next) : next();
  };
  return (ctx, next) => {
    if (ctx.state.endpoint.template) filterPath(ctx);
    // node:querystring, not Koa's ctx.query (URLSearchParams), which cost a GET endpoint dearly
    // (docs/performance.md, "Reads on the request path").
    if (ctx.method === 'GET' || takesQuery(ctx)) {
      filterPayload(ctx, parseTextFields(ctx.querystring), 'text-fields');
      return filtered(ctx, next);
    }
    const preread = ctx.state.preread;
    if (preread) {
      filterBody(ctx, preread, true);
      return filtered(ctx, next);
    }
    const filter = ctx.state.endpoint.clientFilter;
    const limits = {
      endpointMax: filter.maxBodyBytes,
      serverMax: server.max_body_bytes,
      allowedContentTypes: filter.allowedContentTypes,
      timeoutMs: server.body_timeout_ms,
    };
    return readPayloadBody(ctx, limits).then(({ body, form, text, raw }) => {
      filterBody(ctx, { body: asPayloadObject(body), form, formText: form ? text : undefined, rawBody: raw }, text !== undefined || raw !== undefined);
      return filtered(ctx, next);
    });
  };
}

/** The payload filtered from a body, and what of it a type that forwards the request sends as received. */
function filterBody(ctx: GatewayContext<FilteringState>, read: PrereadBody, bodyRead: boolean): void {
  filterPayload(ctx, read.body, read.form ? 'text-fields' : 'json');
  const state = ctx.state as FilteringState & PayloadFiltered;
  state.bodyRead = bodyRead;
  if (read.formText !== undefined) state.formText = read.formText;
  if (read.rawBody) state.rawBody = read.rawBody;
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

/** The caller as an internal call acts: the credential authentication found for this request. */
export function asCaller(state: AuthenticatedState): { key: string; as: InternalCaller } {
  const { caller, credential, session, apiKey, jwt } = state;
  // Per caller and credential: an API key's or token's scope may let it see less than its user's session.
  const key = `${caller.id}/${credential.kind === 'session' ? 'session' : `${credential.kind}:${credential.id}`}`;
  return { key, as: { authenticated: { caller, credential, ...(session && { session }), ...(apiKey && { apiKey }), ...(jwt && { jwt }) } } };
}

/**
 * Each present field with choices_from holds one of the choices its endpoint gives this caller (asked with its args
 * from this payload, at once for all such fields); else 400 invalid_payload naming it. A missing arg field is 400
 * too; the endpoint failing is 502 choices_failed at the field (parameters/field-choices.ts).
 */
async function checkChoices(ctx: GatewayContext<FilteringState>, choices: FieldChoices<InternalCaller>): Promise<void> {
  const { toolkit, endpoint, requestId } = ctx.state;
  const payload = (ctx.state as FilteringState & PayloadFiltered).payload;
  const asker = { ...asCaller(ctx.state), requestId };
  const problems: FieldProblem[] = [];
  await Promise.all(
    endpoint.clientFilter.choiceFields!.map(async ([field, rule]) => {
      if (payload[field] === undefined) return;
      const args = choiceArgs(rule, payload);
      if ('missing' in args) {
        problems.push({ field: args.missing, rule: 'required', message: `${args.missing} is required: ${field}'s choices depend on it` });
        return;
      }
      const list = await choices.choices(toolkit, field, rule, args.args, asker);
      if (!isChoice(list, payload[field])) problems.push({ field, rule: 'choices_from', message: `${field} must be one of the choices of ${rule.endpoint}` });
    }),
  );
  if (problems.length > 0) throw invalidPayload(problems);
}

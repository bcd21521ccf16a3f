import type { JsonSchema } from '../plugins/response-description.js';
import type { CompiledEndpoint, CompiledToolkit } from '../toolkits/compiled-toolkit.js';
import {
  errorResponses,
  INTERNAL_ERROR,
  INVALID_PAYLOAD,
  INVALID_SIGNATURE,
  PAYLOAD_TOO_LARGE,
  successResponse,
  UNAUTHORIZED,
  type ErrorCase,
} from './envelope-schemas.js';
import { RATE_LIMIT_ERRORS, withRateLimit } from './rate-limit-responses.js';
import { pathParameters, queryNote, queryParameters, requestBody } from './request-schemas.js';

/** One toolkit's endpoints as OpenAPI path items, each method an operation; `reaches` filters by power. */

const NOT_FOUND: ErrorCase[] = [
  { status: 404, code: 'toolkit_not_found', description: 'the toolkit was removed or disabled since.' },
  { status: 404, code: 'endpoint_not_found', description: 'the endpoint was removed since.' },
];
const RUN_QUEUE_FULL: ErrorCase = { status: 503, code: 'busy', description: "the endpoint's queue of runs is full (max_queued); see Retry-After." };
const RUN_ACCEPTED: JsonSchema = {
  type: 'object',
  required: ['run_id', 'status', 'links'],
  properties: {
    run_id: { type: 'string' },
    status: {
      type: 'string',
      enum: ['queued', 'awaiting_approval'],
      description: 'awaiting_approval when the endpoint needs approval (docs/runs.md, Approvals)',
    },
    links: { type: 'object', properties: { self: { type: 'string' }, output: { type: 'string' }, cancel: { type: 'string' } } },
  },
};
const DB_CONTEXT_FAILED: ErrorCase = { status: 500, code: 'db_context_failed', description: 'reading inject_db_context failed; the cause is logged.' };

export interface ToolkitPathOptions {
  maxBodyBytes: number;
  /** Whether the caller may call an endpoint (undefined: every endpoint, as for `tkgate openapi`). */
  reaches: (endpoint: CompiledEndpoint) => boolean;
}

export function toolkitPaths(toolkit: CompiledToolkit, options: ToolkitPathOptions): Record<string, JsonSchema> {
  const paths: Record<string, JsonSchema> = {};
  for (const [path, byMethod] of [...toolkit.routes].sort(([a], [b]) => a.localeCompare(b))) {
    const item: JsonSchema = {};
    for (const [method, endpoint] of byMethod) {
      if (options.reaches(endpoint)) item[method.toLowerCase()] = operation(toolkit, endpoint, method, options.maxBodyBytes);
    }
    if (Object.keys(item).length > 0) paths[`/tk/${toolkit.kind}/${toolkit.name}/${path.replace(/\*$/, '{*}')}`] = item;
    const withChoices = [...byMethod.values()].find((endpoint) => endpoint.clientFilter.choiceFields && options.reaches(endpoint));
    if (withChoices) paths[`/choices/${toolkit.name}/${path}`] = { get: choicesOperation(toolkit, withChoices) };
  }
  return paths;
}

const CHOICES_FAILED: ErrorCase = {
  status: 502,
  code: 'choices_failed',
  description: "the endpoint a field's choices come from (choices_from) failed; details name the field.",
};

/** GET {base}/choices/{toolkit}/{endpoint path} (docs/toolkits.md, "Choices from another endpoint"): its fields and their args. */
function choicesOperation(toolkit: CompiledToolkit, endpoint: CompiledEndpoint): JsonSchema {
  const fields = endpoint.clientFilter.choiceFields!;
  const args = [...new Set(fields.flatMap(([, rule]) => rule.args.flatMap(([name, arg]) => ('field' in arg ? [name] : []))))];
  return {
    operationId: `choices.${toolkit.name}.${endpoint.path.replaceAll('/', '.')}`,
    tags: [toolkit.name],
    summary: `The choices a field of ${endpoint.path} offers the caller`,
    parameters: [
      { name: 'field', in: 'query', required: true, schema: { enum: fields.map(([field]) => field) } },
      ...args.map((name) => ({
        name,
        in: 'query',
        required: false,
        description: 'an arg of the choices call (needed by the fields whose args name it)',
        schema: { type: 'string' },
      })),
    ],
    responses: {
      200: successResponse('The choices.', {
        type: 'object',
        required: ['choices'],
        properties: {
          choices: {
            type: 'array',
            items: {
              type: 'object',
              required: ['value', 'label'],
              properties: { value: { type: ['string', 'number', 'boolean'] }, label: { type: 'string' } },
            },
          },
        },
      }),
      ...errorResponses([
        { ...INVALID_PAYLOAD, description: 'no such field with choices_from, or an arg it needs is missing; details name it.' },
        UNAUTHORIZED,
        ...NOT_FOUND,
        ...(endpoint.minPower > 0 ? [{ status: 403, code: 'forbidden', description: `the caller's power is below ${endpoint.minPower}.` }] : []),
        CHOICES_FAILED,
      ]),
    },
  };
}

/** Methods whose payload is the query string (a DELETE's may also be a body; its query is shown). */
const QUERY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);

function operation(toolkit: CompiledToolkit, endpoint: CompiledEndpoint, method: string, maxBodyBytes: number): JsonSchema {
  const described = endpoint.type.describeResponse?.(endpoint.typeConfig) ?? {};
  const filter = endpoint.clientFilter;
  const own = described.errors ?? [];
  // The plugin's declared codes, unless describeResponse already says when they happen.
  const declared = endpoint.pluginErrors.filter((error) => !own.some((described) => described.code === error.code));
  const errors: ErrorCase[] = [UNAUTHORIZED, ...NOT_FOUND, INVALID_PAYLOAD, INTERNAL_ERROR, ...own, ...declared];
  if (endpoint.minPower > 0) errors.push({ status: 403, code: 'forbidden', description: `the caller's power is below ${endpoint.minPower}.` });
  if (endpoint.dbContext.length > 0) errors.push(DB_CONTEXT_FAILED);
  if (filter.choiceFields) errors.push(CHOICES_FAILED);
  const rateLimit = endpoint.rateLimit ?? toolkit.rateLimit;
  if (rateLimit) errors.push(...RATE_LIMIT_ERRORS);
  const op: JsonSchema = {
    operationId: `tk.${toolkit.kind}.${toolkit.name}.${endpoint.path.replaceAll('/', '.')}.${method.toLowerCase()}`,
    tags: [toolkit.name],
    // Nothing of the type's configuration (upstream URLs, commands) is shown: only what a caller needs.
    summary: endpoint.description?.split('\n')[0] ?? `${method} ${endpoint.path}`,
    'x-min-power': endpoint.minPower,
  };
  if (endpoint.description) op.description = endpoint.description;
  const fields = { needed: endpoint.neededPayloadFields, optional: endpoint.optionalPayloadFields };
  const inPath = pathParameters(endpoint);
  if (inPath.length > 0) op.parameters = inPath;
  if (QUERY_METHODS.has(method)) {
    op.parameters = [...inPath, ...queryParameters(filter, fields)];
    op.description = [endpoint.description, queryNote(filter)].filter(Boolean).join('\n\n');
  } else {
    op.requestBody = requestBody(filter, fields, maxBodyBytes);
    errors.push(PAYLOAD_TOO_LARGE);
  }
  // An endpoint that runs as a job (docs/runs.md) answers 202 with its run, whatever its type answers a call with.
  const detached = endpoint.type.runDetached !== undefined && endpoint.type.detached?.(endpoint.typeConfig) !== undefined;
  if (detached) errors.push(RUN_QUEUE_FULL);
  const success: Record<string, JsonSchema> = detached
    ? { 202: successResponse('The run is recorded; follow it at links.self (Location) and links.output.', RUN_ACCEPTED) }
    : described.websocket
      ? { 101: { description: described.websocket.description } }
      : { 200: described.raw ?? successResponse("The endpoint's result, in the envelope.", described.data) };
  if (described.websocket) op['x-websocket'] = true;
  // A triggered endpoint (docs/triggers.md): which scheme signs its calls and whom they act as, never the secret.
  if (endpoint.trigger) {
    op['x-trigger'] = { verify: endpoint.trigger.scheme, as: endpoint.trigger.as };
    errors.push(INVALID_SIGNATURE);
  }
  // Fields other than those listed reach the endpoint (no allowed_fields): a client may send any (the console offers a free query and body).
  if (!filter.allowedFields) op['x-open-payload'] = true;
  const responses = { ...success, ...errorResponses(errors) };
  if (rateLimit) withRateLimit(op, responses, rateLimit);
  op.responses = responses;
  return op;
}

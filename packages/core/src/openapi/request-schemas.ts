import type { PayloadFields } from '../plugins/plugin-api.js';
import { PARSEABLE_CONTENT_TYPES } from '../http/payload-body.js';
import type { JsonSchema } from '../plugins/response-description.js';
import type { CompiledEndpoint } from '../toolkits/compiled-toolkit.js';
import type { CompiledClientFilter, CompiledFieldRule } from '../toolkits/client-filter.js';

/** The body types the gateway parses into the payload (the others are passed as received). */
const PARSED: ReadonlySet<string> = new Set(PARSEABLE_CONTENT_TYPES);

/**
 * client_filter as OpenAPI: the query parameters of a GET, the request body of a POST. Fields not in
 * allowed_fields are stripped rather than refused, so the schemas stay open (no additionalProperties: false).
 */

/** One field rule as JSON Schema. max_length is a length for strings and a count for arrays: both keywords say so. */
export function fieldSchema(rule: CompiledFieldRule | undefined): JsonSchema {
  const schema: JsonSchema = {};
  if (rule?.type) schema.type = rule.type;
  if (rule?.maxLength !== undefined) {
    if (rule.type !== 'array') schema.maxLength = rule.maxLength;
    if (rule.type === undefined || rule.type === 'array') schema.maxItems = rule.maxLength;
  }
  if (rule?.pattern) schema.pattern = rule.pattern.source;
  if (rule?.allowedValues) schema.enum = rule.allowedValues;
  // A secret field (docs/toolkits.md): a form shows a password input, and no answer repeats it.
  if (rule?.secret) Object.assign(schema, { format: 'password', writeOnly: true });
  // choices_from: GET {base}/choices/{toolkit}/{endpoint path}?field=<this field> lists the values; `args` names, per
  // query parameter of that call, the field of this payload whose value it takes (a form reloads on its change).
  if (rule?.choicesFrom) {
    const args = Object.fromEntries(rule.choicesFrom.args.flatMap(([name, arg]) => ('field' in arg ? [[name, arg.field]] : [])));
    schema['x-tkgate-choices'] = { endpoint: rule.choicesFrom.endpoint, args };
  }
  return schema;
}

/**
 * The fields the filter names, in a stable order: allowed, then required, then those with rules, then those
 * the endpoint needs, then those it reads when given (an optional filter, a page size).
 */
function namedFields(filter: CompiledClientFilter, fields: PayloadFields): string[] {
  return [...new Set([...(filter.allowedFields ?? []), ...filter.requiredFields, ...filter.fieldRules.keys(), ...fields.needed, ...fields.optional])];
}

/** Required fields: those of required_fields, and those a `$payload.<field>` of the endpoint needs (absent: 400). */
const requiredOf = (filter: CompiledClientFilter, fields: PayloadFields): string[] => [...new Set([...filter.requiredFields, ...fields.needed])];

const OPEN_PAYLOAD_NOTE = 'Fields other than those listed are passed on too (no allowed_fields).';
const STRIPPED_NOTE = 'Fields other than those listed are stripped.';

/** GET: each field a query parameter. Numbers and booleans arrive as strings and are converted. */
export function queryParameters(filter: CompiledClientFilter, fields: PayloadFields): JsonSchema[] {
  const required = requiredOf(filter, fields);
  return namedFields(filter, fields).map((name) => ({
    name,
    in: 'query',
    required: required.includes(name),
    schema: fieldSchema(filter.fieldRules.get(name)),
  }));
}

/** A template endpoint's path parameters (`{name}`, and `{*}` for a wildcard's rest), with their path_rules. */
export function pathParameters(endpoint: CompiledEndpoint): JsonSchema[] {
  return (endpoint.template?.params ?? []).map((name) => ({
    name,
    in: 'path',
    required: true,
    description: name === '*' ? 'The rest of the path: any depth, possibly empty.' : 'One path segment of A-Z a-z 0-9 . _ ~ - (percent-decoded).',
    schema: {
      ...(name === '*' ? { type: 'string' } : { type: 'string', pattern: '^[A-Za-z0-9._~-]+$' }),
      ...fieldSchema(endpoint.clientFilter.pathRules.get(name)),
    },
  }));
}

/** POST: the body, as JSON and/or a form, with its size limit in x-max-body-bytes. */
export function requestBody(filter: CompiledClientFilter, fields: PayloadFields, serverMaxBodyBytes: number): JsonSchema {
  const properties = Object.fromEntries(namedFields(filter, fields).map((name) => [name, fieldSchema(filter.fieldRules.get(name))]));
  const required = requiredOf(filter, fields);
  const schema: JsonSchema = {
    type: 'object',
    properties,
    description: filter.allowedFields ? STRIPPED_NOTE : OPEN_PAYLOAD_NOTE,
  };
  if (required.length > 0) schema.required = required;
  const maxBodyBytes = Math.min(filter.maxBodyBytes ?? serverMaxBodyBytes, serverMaxBodyBytes);
  return {
    required: required.length > 0,
    // A body of another type is not parsed: its bytes, passed as received.
    content: Object.fromEntries(filter.allowedContentTypes.map((type) => [type, { schema: PARSED.has(type) ? schema : { type: 'string', format: 'binary' } }])),
    'x-max-body-bytes': maxBodyBytes,
  };
}

/** A note for a GET operation whose parameters are not the whole story. */
export const queryNote = (filter: CompiledClientFilter): string => (filter.allowedFields ? STRIPPED_NOTE : OPEN_PAYLOAD_NOTE);

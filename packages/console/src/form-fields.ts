/**
 * The fields of an endpoint's form, from its OpenAPI operation (the client_filter as JSON Schema): string →
 * text with maxlength and pattern, allowed values → a select, integer/number → number, boolean → checkbox,
 * required fields marked. Pure: no DOM, so the unit tier tests it (test/unit/console/).
 */

export interface FieldSchema {
  type?: string;
  maxLength?: number;
  pattern?: string;
  enum?: unknown[];
  /** `password`: a secret field (never shown, a password input). */
  format?: string;
  /** choices_from: the endpoint answering the choices, and per arg of its call the field whose value it takes. */
  'x-tkgate-choices'?: FieldChoices;
}

/** Where a select's choices come from: GET {base}/choices/{toolkit}/{endpoint}?field=<field>&<arg>=<value of its field>. */
export interface FieldChoices {
  endpoint: string;
  args: Record<string, string>;
}

export interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: FieldSchema }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { properties?: Record<string, FieldSchema>; required?: string[] } }> };
  responses?: Record<string, unknown>;
  /** A WebSocket endpoint: a GET with Upgrade answers 101 (a plain call is 426). */
  'x-websocket'?: boolean;
  /** Fields other than those listed reach the endpoint (no allowed_fields; a forwarded request takes any). */
  'x-open-payload'?: boolean;
  /** Signed calls start it without a credential (docs/triggers.md): the scheme and the user they act as. */
  'x-trigger'?: { verify: string; as: string };
}

export type FieldKind = 'text' | 'select' | 'number' | 'checkbox' | 'json';

export interface FormField {
  name: string;
  /**
   * Where the value goes: the path template, the query string, or the JSON body; `raw` is an open payload's free
   * part: more query parameters (`a=1&b=2`) of a query operation, or the whole JSON body of one with a body.
   */
  in: 'path' | 'query' | 'body' | 'raw';
  kind: FieldKind;
  required: boolean;
  maxLength?: number;
  pattern?: string;
  /** A select's values, as the gateway will receive them. */
  options?: unknown[];
  /** Labels of a select's options, by value (choices_from), where they differ from the value. */
  labels?: Map<string, string>;
  integer?: boolean;
  /** A secret field: a password input, its value never shown. */
  secret?: boolean;
  /** choices_from: the select's options are loaded, and reloaded when a field named in `args` changes. */
  choices?: FieldChoices;
}

function fieldOf(name: string, where: FormField['in'], required: boolean, schema: FieldSchema = {}): FormField {
  const field: FormField = { name, in: where, required, kind: 'text' };
  const choices = schema['x-tkgate-choices'];
  if (choices && typeof choices.endpoint === 'string') {
    field.kind = 'select';
    field.options = [];
    field.choices = { endpoint: choices.endpoint, args: { ...choices.args } };
  } else if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    field.kind = 'select';
    field.options = schema.enum;
  } else if (schema.type === 'integer' || schema.type === 'number') {
    field.kind = 'number';
    field.integer = schema.type === 'integer';
  } else if (schema.type === 'boolean') field.kind = 'checkbox';
  else if (schema.type === 'array' || schema.type === 'object') field.kind = 'json';
  if (schema.format === 'password') field.secret = true;
  if (field.kind === 'text') {
    if (typeof schema.maxLength === 'number') field.maxLength = schema.maxLength;
    if (typeof schema.pattern === 'string') field.pattern = schema.pattern;
  }
  return field;
}

/**
 * The path of a field's choices (`/choices/{toolkit}/{endpoint path}?field=...&<arg>=...`, the form's own endpoint) from its current values,
 * or the name of the field that has no value yet (its choices depend on it).
 */
export function choicesPath(operationPath: string, field: FormField, values: Record<string, string | boolean>): { path: string } | { waitFor: string } {
  const query = new URLSearchParams({ field: field.name });
  for (const [arg, from] of Object.entries(field.choices?.args ?? {})) {
    const value = values[from];
    if (value === undefined || value === '') return { waitFor: from };
    query.set(arg, String(value));
  }
  // /tk/<kind>/<toolkit>/<endpoint path> → /choices/<toolkit>/<endpoint path> (a template's {name} as written).
  const [, , , toolkit, ...endpoint] = operationPath.split('/');
  return { path: `/choices/${toolkit}/${endpoint.join('/')}?${query}` };
}

/** The names of an open payload's free fields: with a space, which no field of a client_filter has. */
export const MORE_QUERY = 'more query parameters';
export const JSON_BODY = 'JSON body';

/**
 * The form fields of one operation: path parameters, then the query's or the JSON body's fields, then for an open
 * payload (x-open-payload: a forwarded request, or no allowed_fields) a free field for the rest of the query or body.
 */
export function formFields(operation: Operation): FormField[] {
  const fields: FormField[] = [];
  for (const parameter of operation.parameters ?? []) {
    if (parameter.in !== 'path' && parameter.in !== 'query') continue;
    fields.push(fieldOf(parameter.name, parameter.in, parameter.required === true, parameter.schema));
  }
  const content = operation.requestBody?.content;
  const schema = content?.['application/json']?.schema ?? (content ? Object.values(content)[0]?.schema : undefined);
  const required = new Set(schema?.required ?? []);
  for (const [name, property] of Object.entries(schema?.properties ?? {})) fields.push(fieldOf(name, 'body', required.has(name), property));
  if (operation['x-open-payload'] && !operation['x-websocket'])
    fields.push({ name: operation.requestBody ? JSON_BODY : MORE_QUERY, in: 'raw', kind: operation.requestBody ? 'json' : 'text', required: false });
  return fields;
}

/** What a form's raw values (strings, and booleans for checkboxes) become in a request. */
export interface FormRequest {
  path: string;
  query: URLSearchParams;
  body?: Record<string, unknown>;
  /** Fields whose text could not be read (a number or JSON field): shown at the field, nothing sent. */
  invalid: Array<{ field: string; message: string }>;
}

/** Percent-encodes a path value; a `{*}` rest keeps its slashes. */
function pathValue(name: string, value: string): string {
  return name === '*' ? value.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(value);
}

export function buildRequest(pathTemplate: string, fields: readonly FormField[], values: Record<string, string | boolean>, hasBody: boolean): FormRequest {
  let path = pathTemplate;
  const query = new URLSearchParams();
  let body: Record<string, unknown> = {};
  const invalid: FormRequest['invalid'] = [];
  for (const field of fields) {
    const raw = values[field.name];
    if (field.in === 'raw') {
      const text = typeof raw === 'string' ? raw.trim() : '';
      if (text === '') continue;
      if (!hasBody) {
        for (const [name, value] of new URLSearchParams(text.replace(/^\?/, ''))) query.append(name, value);
        continue;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        invalid.push({ field: field.name, message: 'not valid JSON' });
        continue;
      }
      // The free body first, the named fields over it.
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) invalid.push({ field: field.name, message: 'must be a JSON object' });
      else body = { ...(parsed as Record<string, unknown>), ...body };
      continue;
    }
    if (field.in === 'path') {
      path = path.replace(`{${field.name}}`, pathValue(field.name, String(raw ?? '')));
      continue;
    }
    if (field.kind === 'checkbox') {
      // Unticked: false when the field is required or goes in a JSON body; an optional query field is left out.
      const value = raw === true;
      if (field.in === 'body') body[field.name] = value;
      else if (value || field.required) query.set(field.name, String(value));
      continue;
    }
    const text = typeof raw === 'string' ? raw : '';
    if (text === '') continue;
    if (field.in === 'query') {
      query.set(field.name, text);
      continue;
    }
    if (field.kind === 'number') {
      const number = Number(text);
      if (!Number.isFinite(number) || (field.integer && !Number.isInteger(number)))
        invalid.push({ field: field.name, message: field.integer ? 'not an integer' : 'not a number' });
      else body[field.name] = number;
    } else if (field.kind === 'json') {
      try {
        body[field.name] = JSON.parse(text);
      } catch {
        invalid.push({ field: field.name, message: 'not valid JSON' });
      }
    } else if (field.kind === 'select') {
      const option = field.options?.find((each) => String(each) === text);
      body[field.name] = option === undefined ? text : option;
    } else body[field.name] = text;
  }
  return hasBody ? { path, query, body, invalid } : { path, query, invalid };
}

/**
 * The 400 details of the gateway (`[{field, rule, message}]`) grouped by the form's field names; others at the free
 * field of an open payload when there is one (naming their field), else under ''.
 */
export function detailsByField(details: unknown, fields: readonly FormField[]): Map<string, string[]> {
  const names = new Set(fields.filter((field) => field.in !== 'raw').map((field) => field.name));
  const rest = fields.find((field) => field.in === 'raw')?.name ?? '';
  const byField = new Map<string, string[]>();
  for (const detail of Array.isArray(details) ? details : []) {
    if (!detail || typeof detail !== 'object') continue;
    const { field, message, rule } = detail as { field?: unknown; message?: unknown; rule?: unknown };
    const top = typeof field === 'string' ? field.split('.')[0]! : '';
    const key = names.has(top) ? top : rest;
    const text = [typeof message === 'string' ? message : '', typeof rule === 'string' ? `(${rule})` : ''].filter(Boolean).join(' ');
    const named = names.has(top) || field === rest;
    byField.set(key, [...(byField.get(key) ?? []), !named && typeof field === 'string' ? `${field}: ${text}` : text]);
  }
  return byField;
}

import type { StandardSchemaV1, StandardJSONSchemaV1 } from '@standard-schema/spec';
import { z } from 'zod';
import type { EndpointTypes } from '../plugins/endpoint-types.js';
import type { JsonSchema } from '../plugins/response-description.js';
import { endpointCoreSchema, toolkitFileSchema } from './toolkit-file-schema.js';

const TARGET = 'draft-2020-12';
const SCHEMA_ID = 'https://json-schema.org/draft/2020-12/schema';

/**
 * `tkgate schema`: the JSON Schema (2020-12) of toolkit files. Core keys come from core's zod schemas; each
 * loaded endpoint type adds its keys through its config schema's Standard JSON Schema (zod 4, valibot,
 * arktype ... provide it), under an if/then on `type`. The endpoint object is closed with
 * unevaluatedProperties, so a misspelt key is an error in an editor as it is in `config check`.
 * What a JSON Schema cannot say (database tables, regex syntax, references between keys) is listed in
 * docs/toolkits.md and is checked by `config check` only.
 */
export function toolkitFileJsonSchema(types: EndpointTypes): JsonSchema {
  const root = withoutDialect(z.toJSONSchema(toolkitFileSchema, { target: TARGET, io: 'input' }) as JsonSchema);
  const defs: Record<string, JsonSchema> = {};
  const names = types.typeNames();
  const endpoint = withoutDialect(z.toJSONSchema(endpointCoreSchema, { target: TARGET, io: 'input' }) as JsonSchema);
  delete endpoint.additionalProperties;
  const properties = endpoint.properties as Record<string, JsonSchema>;
  properties.type = { ...properties.type, enum: names };
  endpoint.description = 'One endpoint: the core keys, plus the keys of its type.';
  endpoint.allOf = names.map((name) => ({
    if: { properties: { type: { const: name } }, required: ['type'] },
    then: typeKeys(types.type(name)!.configSchema, name, defs),
  }));
  endpoint.unevaluatedProperties = false;
  const rootProperties = root.properties as Record<string, JsonSchema>;
  rootProperties.endpoints = { ...rootProperties.endpoints, items: endpoint };
  return {
    $schema: SCHEMA_ID,
    title: 'tkgate toolkit file',
    description: `A toolkit: one file in toolkits.dir. Endpoint types: ${names.join(', ')}.`,
    ...root,
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  };
}

/**
 * One type's keys, for the `then` of its `type:` value. Its top-level additionalProperties goes: beside
 * the core keys it would refuse them, and the endpoint's unevaluatedProperties refuses unknown keys instead.
 * Its $defs move to the root under the type's name, since they are referenced from there.
 */
function typeKeys(schema: StandardSchemaV1<unknown, unknown>, type: string, defs: Record<string, JsonSchema>): JsonSchema {
  const converter = (schema['~standard'] as Partial<StandardJSONSchemaV1.Props>).jsonSchema;
  if (!converter) {
    // A library without Standard JSON Schema: say so, and let every key through (config check still checks them).
    return { description: `The keys of type ${type} (its plugin's schema does not describe itself).`, additionalProperties: true };
  }
  const keys = withoutDialect(converter.input({ target: TARGET, libraryOptions: { unrepresentable: 'any' } }) as JsonSchema);
  if (keys.additionalProperties === false) delete keys.additionalProperties;
  const own = (keys.$defs ?? {}) as Record<string, JsonSchema>;
  delete keys.$defs;
  for (const [name, def] of Object.entries(own)) defs[`${type}.${name}`] = def;
  return renameRefs(keys, type) as JsonSchema;
}

function withoutDialect(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function renameRefs(value: unknown, type: string): unknown {
  if (Array.isArray(value)) return value.map((item) => renameRefs(item, type));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) =>
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#/$defs/')
        ? [key, `#/$defs/${type}.${inner.slice('#/$defs/'.length)}`]
        : [key, renameRefs(inner, type)],
    ),
  );
}

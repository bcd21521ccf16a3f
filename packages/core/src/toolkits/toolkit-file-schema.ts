import { z } from 'zod';

/**
 * The core keys of a toolkit file (SPEC section 5). Endpoint keys that are not listed here belong to the
 * endpoint's type and are validated by its plugin's schema.
 */
const fieldName = z.string().min(1).max(128);

export const FIELD_TYPES = ['string', 'integer', 'number', 'boolean', 'object', 'array'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

const fieldRule = z.strictObject({
  type: z.enum(FIELD_TYPES).optional(),
  max_length: z.number().int().min(0).optional(),
  pattern: z.string().max(1000).optional(),
  allowed_values: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])).min(1).optional(),
});
export type FieldRuleConfig = z.infer<typeof fieldRule>;

export const PARSEABLE_CONTENT_TYPES = ['application/json', 'application/x-www-form-urlencoded'] as const;

const clientFilter = z.strictObject({
  allowed_fields: z.array(fieldName).optional(),
  required_fields: z.array(fieldName).optional(),
  max_body_bytes: z.number().int().min(0).optional(),
  allowed_content_types: z.array(z.enum(PARSEABLE_CONTENT_TYPES)).min(1).optional(),
  field_rules: z.record(fieldName, fieldRule).optional(),
});
export type ClientFilterConfig = z.infer<typeof clientFilter>;

const method = z.enum(['GET', 'POST']);

export const endpointCoreSchema = z.strictObject({
  path: z
    .string()
    .regex(/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/, 'must be path segments like "items/search" (no leading or trailing slash)'),
  method: z.union([method, z.array(method).min(1)]),
  type: z.string().min(1),
  description: z.string().optional(),
  permissions: z.strictObject({ min_power: z.number().int() }).optional(),
  client_filter: clientFilter.optional(),
  inject_db_context: z.array(z.string()).optional(),
  overwrite_wrapping: z.array(z.string()).optional(),
});
export type EndpointCoreConfig = z.infer<typeof endpointCoreSchema>;
export const ENDPOINT_CORE_KEYS = new Set(Object.keys(endpointCoreSchema.shape));

export const toolkitFileSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'must match [a-z0-9][a-z0-9_-]*').max(64),
  type: z.enum(['app', 'lib']),
  enabled: z.boolean().default(true),
  description: z.string().optional(),
  default_group: z.string().min(1).max(64).optional(),
  endpoints: z.array(z.record(z.string(), z.unknown())).min(1),
});
export type ToolkitFileConfig = z.infer<typeof toolkitFileSchema>;


import { z } from 'zod';
import type { Issue } from '../config/schema-issues.js';
import { secretReference, type SecretReference } from '../secrets/secret-reference.js';
import { compileJsonPath, type JsonPath } from './json-paths.js';
import { SCHEME_NAMES, type SchemeName } from './trigger-schemes.js';

/** A header name as HTTP spells one (RFC 9110 token characters). */
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a header name');
const exactValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** `trigger` (docs/triggers.md): an endpoint other systems call with a signed request instead of a credential. */
export const triggerSchema = z
  .strictObject({
    verify: z.enum(SCHEME_NAMES).describe('How the request is signed: github, gitlab, slack, stripe, standard-webhooks, or hmac (trigger.hmac says how).'),
    secret: secretReference.describe('The shared secret or signing key, as a secret reference (standard-webhooks: whsec_ + base64).'),
    as: z.string().min(1).max(255).describe('The tkgate user a signed call acts as: its power, group and permissions apply.'),
    when: z
      .strictObject({
        header: z.record(headerName, z.string()).optional().describe('Headers that must have exactly these values (names in any case).'),
        payload: z.record(z.string().min(1).max(256), exactValue).optional().describe('Body fields (a.b or $.a.b paths) that must have exactly these values.'),
      })
      .optional()
      .describe('Only calls matching every entry run; any other verified call answers 200 {"ignored": true} and nothing runs.'),
    payload_map: z
      .record(z.string().min(1).max(128), z.string().min(2).max(256))
      .optional()
      .describe('The payload the endpoint gets, built from $.a.b / $.a[0].b paths of the body (a missing path leaves its field out); then client_filter.'),
    hmac: z
      .strictObject({
        header: headerName.describe('The header that carries the signature.'),
        algorithm: z.enum(['sha256', 'sha512']).default('sha256').describe('The HMAC hash (default sha256).'),
        encoding: z.enum(['hex', 'base64']).default('hex').describe('How the signature is written (default hex).'),
        prefix: z.string().max(32).default('').describe('Text before the signature in the header (for example "sha256="); default none.'),
      })
      .optional()
      .describe('verify: hmac only: the header, algorithm, encoding and prefix of an HMAC of the raw body.'),
  })
  .describe('Signed calls (docs/triggers.md): GitHub, GitLab, Slack, Stripe, Standard Webhooks or an HMAC start the endpoint without a credential.');
export type TriggerConfig = z.infer<typeof triggerSchema>;

export interface CompiledHmac {
  header: string;
  algorithm: 'sha256' | 'sha512';
  encoding: 'hex' | 'base64';
  prefix: string;
}

/** An endpoint's `trigger`, compiled: paths parsed, header names lower-cased. */
export interface CompiledTrigger {
  scheme: SchemeName;
  secret: SecretReference;
  as: string;
  whenHeaders: ReadonlyArray<readonly [name: string, value: string]>;
  whenPayload: ReadonlyArray<readonly [path: JsonPath, value: string | number | boolean | null]>;
  payloadMap?: ReadonlyArray<readonly [field: string, path: JsonPath]>;
  hmac?: CompiledHmac;
}

/** The `trigger` of an endpoint, checked: hmac options exactly for verify: hmac, POST only, every path parseable. */
export function compileTrigger(
  config: TriggerConfig | undefined,
  methods: readonly string[],
  issues: Issue[],
  at: Array<string | number>,
): CompiledTrigger | undefined {
  if (!config) return undefined;
  if (config.verify === 'hmac' && !config.hmac)
    issues.push({ path: [...at, 'hmac'], message: 'verify: hmac needs trigger.hmac ({ header, algorithm, encoding, prefix })' });
  if (config.verify !== 'hmac' && config.hmac)
    issues.push({ path: [...at, 'hmac'], message: `only for verify: hmac (this trigger verifies ${config.verify})` });
  if (methods.length !== 1 || methods[0] !== 'POST')
    issues.push({
      path: [...at, 'verify'],
      message: 'a triggered endpoint takes POST only (providers send their events as POST bodies)',
      hint: 'set method: POST',
    });
  const pathOf = (text: string, where: Array<string | number>): JsonPath | undefined => {
    const path = compileJsonPath(text.startsWith('$') ? text : `$.${text}`);
    if (!path) issues.push({ path: where, message: `${text} is not a JSON path like $.a.b or $.a[0].b` });
    return path;
  };
  const whenPayload: Array<readonly [JsonPath, string | number | boolean | null]> = [];
  for (const [text, value] of Object.entries(config.when?.payload ?? {})) {
    const path = pathOf(text, [...at, 'when', 'payload', text]);
    if (path) whenPayload.push([path, value]);
  }
  let payloadMap: Array<readonly [string, JsonPath]> | undefined;
  if (config.payload_map) {
    payloadMap = [];
    for (const [field, text] of Object.entries(config.payload_map)) {
      if (!text.startsWith('$')) {
        issues.push({ path: [...at, 'payload_map', field], message: `${text} is not a JSON path: it starts with $ ($.a.b or $.a[0].b)` });
        continue;
      }
      const path = pathOf(text, [...at, 'payload_map', field]);
      if (path) payloadMap.push([field, path]);
    }
  }
  return {
    scheme: config.verify,
    secret: config.secret,
    as: config.as,
    whenHeaders: Object.entries(config.when?.header ?? {}).map(([name, value]) => [name.toLowerCase(), value] as const),
    whenPayload,
    ...(payloadMap ? { payloadMap } : {}),
    ...(config.hmac && config.verify === 'hmac' ? { hmac: config.hmac } : {}),
  };
}

import { z } from 'zod';
import { PARSEABLE_CONTENT_TYPES } from '../http/payload-body.js';
import { durationMs } from '../plugins/config-schemas.js';
import { rateLimitSchema } from '../rate-limits/rate-limit-rule.js';
import { choicesFromSchema } from '../parameters/index.js';
import { triggerSchema } from '../triggers/trigger-config.js';
import { ENTRY } from './db-context-entries.js';

/**
 * The core keys of a toolkit file (docs/toolkits.md). Endpoint keys that are not listed here belong to the
 * endpoint's type and are validated by its plugin's schema. Every key has a description: `tkgate schema`
 * turns these schemas into the JSON Schema editors use for completion and hover text.
 */
const fieldName = z.string().min(1).max(128);

export const FIELD_TYPES = ['string', 'integer', 'number', 'boolean', 'object', 'array'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

const fieldRule = z.strictObject({
  type: z.enum(FIELD_TYPES).optional().describe("The value's type. In GET query strings and forms, integer, number and boolean accept their string form."),
  max_length: z.number().int().min(0).optional().describe('Strings: at most this many characters (code points). Arrays: at most this many items.'),
  pattern: z
    .string()
    .max(1000)
    .optional()
    .describe('A regular expression (RE2 syntax: no backreferences or lookaround) the string must contain a match of; anchor with ^…$ for the whole value.'),
  allowed_values: z
    .array(z.union([z.string(), z.number(), z.boolean(), z.null()]))
    .min(1)
    .optional()
    .describe('The value must equal one of these.'),
});

/** A payload field's rule: a path parameter's rules plus where its allowed values come from and whether it is secret (docs/toolkits.md). */
const payloadFieldRule = fieldRule.extend({
  choices_from: choicesFromSchema.optional(),
  secret: z
    .boolean()
    .optional()
    .describe(
      'true: the value reaches the command or upstream and is kept and shown nowhere: *** in run payloads, audit details, approvals and the console (a password input); masked in logs and output.',
    ),
});
export type FieldRuleConfig = z.infer<typeof payloadFieldRule>;

export { PARSEABLE_CONTENT_TYPES };

/** A media type `type/subtype` (RFC 9110 8.3.1 tokens, no parameters, no wildcard): a body taken as bytes, passed as received. */
const OTHER_CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

const clientFilter = z.strictObject({
  allowed_fields: z.array(fieldName).optional().describe('Only these fields reach the endpoint; others are stripped silently. Absent: every field passes.'),
  required_fields: z
    .array(fieldName)
    .optional()
    .describe('Each must be present (400 invalid_payload otherwise); must also be in allowed_fields when that is set.'),
  max_body_bytes: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('A larger POST body is 400 invalid_payload (server.max_body_bytes still caps everything with 413).'),
  allowed_content_types: z
    .array(
      z.union([
        z.enum(PARSEABLE_CONTENT_TYPES),
        z
          .string()
          .regex(OTHER_CONTENT_TYPE, 'must be a media type such as text/plain (type/subtype, no parameters)')
          .describe(
            'Another media type (text/plain, application/xml, application/octet-stream): its body is not parsed, and a type that forwards the request passes it as received.',
          ),
      ]),
    )
    .min(1)
    .optional()
    .describe('The body types accepted; default application/json and application/x-www-form-urlencoded.'),
  field_rules: z
    .record(fieldName, payloadFieldRule.describe('Rules for this field, checked when it is present.'))
    .optional()
    .describe('Rules per field, keyed by field name.'),
  path_rules: z
    .record(z.string().regex(/^(?:[A-Za-z_][A-Za-z0-9_]*|\*)$/, 'must be a path parameter name'), fieldRule.describe("Rules for this path parameter's value."))
    .optional()
    .describe('Rules per path parameter ({name} of the path, * for the rest), checked before the payload; a failure names path.<name>.'),
});
export type ClientFilterConfig = z.infer<typeof clientFilter>;

/** Every method an endpoint may list; its type says which it takes (EndpointType.methods: GET and POST unless it says more). */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const method = z.enum(HTTP_METHODS);

/** `approval` (docs/runs.md, "Approvals"): who must approve a run of an endpoint that runs as a job before it starts. */
export const approvalSchema = z.strictObject({
  approvers: z
    .strictObject({
      min_power: z.number().int().optional().describe('Approvers have at least this power.'),
      group: z.string().min(1).max(64).optional().describe('Approvers belong to this core group.'),
    })
    .refine((approvers) => approvers.min_power !== undefined || approvers.group !== undefined, { message: 'needs min_power, group or both' })
    .describe('Who may approve or reject: min_power and/or a core group (both must hold when both are given).'),
  quorum: z.number().int().min(1).max(10).default(1).describe('Distinct approvals that start the run (default 1).'),
  expires: durationMs.optional().describe('A run not approved within this ends expired (default 1h).'),
  allow_self: z.boolean().default(false).describe("true: the run's caller may approve it too (default false)."),
  dry_run: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .optional()
    .describe(
      "A command the endpoint's type runs at once with the same context (exec: like command); its output (at most 64 KiB, secrets masked) is shown to approvers.",
    ),
});
export type ApprovalConfig = z.infer<typeof approvalSchema>;

/** One entry of `schedule` (docs/schedules.md): a run of the endpoint by the clock, exactly once per fire time. */
export const scheduleSchema = z.strictObject({
  name: z
    .string()
    .max(64)
    .regex(/^[a-z0-9][a-z0-9_-]*$/, 'must be [a-z0-9][a-z0-9_-]*')
    .describe('Unique within the endpoint; the schedule id is <toolkit>/<endpoint path>#<name> (a renamed schedule is a new one).'),
  cron: z.string().min(1).describe('5 fields (minute hour day month weekday), or 6 with seconds first; or @hourly, @daily, @weekly, @monthly.'),
  timezone: z.string().min(1).default('UTC').describe('The IANA time zone the fire times are computed in (default UTC).'),
  as: z.string().min(1).max(64).describe("The tkgate user the run acts as: its permissions are checked at each fire, as a call's are."),
  payload: z.record(z.string(), z.unknown()).default({}).describe("The run's payload; it passes client_filter as a call's body would."),
  overlap: z
    .enum(['skip', 'queue', 'allow'])
    .default('skip')
    .describe("A fire while this schedule's last run has not ended: skip (default), queue (behind it, within max_queued) or allow."),
  missed: z
    .enum(['latest', 'skip'])
    .default('latest')
    .describe('After downtime: latest (default) makes up the latest missed fire with one run, skip makes up none.'),
  missed_window: durationMs.optional().describe('Missed fires older than this are never made up (default 1h).'),
});
export type ScheduleConfig = z.infer<typeof scheduleSchema>;
/** The events a `notify` rule may name (docs/notifications.md, "Events"). */
export const NOTIFY_EVENTS = [
  'run.queued',
  'run.awaiting_approval',
  'run.started',
  'run.succeeded',
  'run.failed',
  'run.cancelled',
  'run.rejected',
  'run.expired',
  'run.recovered',
  'schedule.missed',
  'schedule.failed',
] as const;

/** `notify` (docs/notifications.md): which run events of an endpoint go to which sink of the server configuration. */
export const notifySchema = z
  .array(
    z.strictObject({
      on: z.array(z.enum(NOTIFY_EVENTS)).min(1).describe('The events sent to the sink: run.failed, run.awaiting_approval, ... (docs/notifications.md).'),
      sink: z.string().min(1).describe('A sink of the server configuration (notifications.sinks).'),
      after_consecutive_failures: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .optional()
        .describe('run.failed only for the Nth failure in a row of the endpoint, and not again until a success (absent: every failure).'),
      on_recovery: z.boolean().default(false).describe('Send run.recovered for the success that follows a run.failed this rule sent.'),
    }),
  )
  .describe("Run events sent to notification sinks (docs/notifications.md); an endpoint's notify replaces its toolkit's.");
export type NotifyConfig = z.infer<typeof notifySchema>;

export const endpointCoreSchema = z.strictObject({
  path: z
    .string()
    .regex(
      /^(?:\*|(?:[A-Za-z0-9._~-]+|\{[A-Za-z_][A-Za-z0-9_]*\})(?:\/(?:[A-Za-z0-9._~-]+|\{[A-Za-z_][A-Za-z0-9_]*\}))*(?:\/\*)?)$/,
      'must be path segments like "items/search", "hosts/{host}/restart" or "files/*" (no leading or trailing slash)',
    )
    .describe(
      'The part after {base}/tk/{type}/{name}/: segments of [A-Za-z0-9._~-] or {name} (one segment, a path parameter), optionally ending with /* (the rest of the path); no leading or trailing slash.',
    ),
  method: z.union([method, z.array(method).min(1)]).describe('GET (payload from the query string), POST (payload from the body), or both as a list.'),
  type: z.string().min(1).describe('The endpoint type: internal, http, exec, or one a loaded plugin registers. Its own keys go beside the core keys.'),
  description: z.string().optional().describe('What the endpoint does, for people; shown in the OpenAPI description.'),
  permissions: z
    .strictObject({ min_power: z.number().int().describe('Callers below this power get 403 forbidden (default 0).') })
    .optional()
    .describe('Who may call the endpoint.'),
  rate_limit: rateLimitSchema.optional(),
  client_filter: clientFilter.optional().describe('Checks on the payload (query string for GET, body for POST), before anything else reads it.'),
  inject_db_context: z
    .array(
      z
        .string()
        .describe('table.column (the caller\'s row), table.column?filter_column=$payload.field (every matching row), optionally followed by " as key".')
        // For editors only: compileDbContext checks the same form with its own message.
        .meta({ pattern: `^\\s*${ENTRY.source.slice(1, -1)}\\s*$` }),
    )
    .optional()
    .describe('Values read from the database into db_context.'),
  overwrite_wrapping: z
    .array(z.string().describe('-field removes a top-level context field; name moves db_context.name to the top level.'))
    .optional()
    .describe('Changes to the request context, applied in order before the endpoint type runs.'),
  audit: z
    .boolean()
    .optional()
    .describe("Record each call in the audit trail (docs/audit.md). Wins over the toolkit's audit; default: the endpoint type's (true for exec, else false)."),
  audit_fields: z
    .array(fieldName)
    .optional()
    .describe("Payload fields whose values a call's audit event keeps in details.payload; default none. A secret field is kept as ***."),
  approval: approvalSchema
    .optional()
    .describe('Only on endpoints that run as jobs (exec with run: async): each run waits for approval before it starts (docs/runs.md).'),
  schedule: z
    .array(scheduleSchema)
    .optional()
    .describe(
      'Only on endpoints that run as jobs (exec with run: async): runs started by the clock, exactly once per fire time across all instances (docs/schedules.md).',
    ),
  notify: notifySchema.optional(),
  trigger: triggerSchema.optional(),
});
export type EndpointCoreConfig = z.infer<typeof endpointCoreSchema>;
export const ENDPOINT_CORE_KEYS = new Set(Object.keys(endpointCoreSchema.shape));

export const toolkitFileSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]*$/, 'must match [a-z0-9][a-z0-9_-]*')
    .max(64)
    .describe("The toolkit's name, unique across all files: [a-z0-9][a-z0-9_-]*. The file name does not matter."),
  type: z.enum(['app', 'lib']).describe('app or lib: the endpoints are served under {base}/tk/app/<name>/ or {base}/tk/lib/<name>/.'),
  enabled: z.boolean().default(true).describe('false: every endpoint answers 404 toolkit_not_found (default true).'),
  description: z.string().optional().describe('What the toolkit is for, for people; shown in the OpenAPI description.'),
  default_group: z.string().min(1).max(64).optional().describe('The toolkit group of callers without an override or an association.'),
  audit: z.boolean().optional().describe("Record each call of this toolkit's endpoints in the audit trail (docs/audit.md); an endpoint's own audit wins."),
  rate_limit: rateLimitSchema.optional(),
  notify: notifySchema.optional(),
  endpoints: z
    .array(z.record(z.string(), z.unknown()).describe("One endpoint: core keys plus its type's keys."))
    .min(1)
    .describe("The toolkit's endpoints; at least one."),
});
export type ToolkitFileConfig = z.infer<typeof toolkitFileSchema>;

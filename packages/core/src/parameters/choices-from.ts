import { z } from 'zod';
import type { Issue } from '../config/schema-issues.js';
import { durationMs } from '../plugins/config-schemas.js';

/**
 * `field_rules.<field>.choices_from` (docs/toolkits.md, "Choices from another endpoint"): the field's allowed values
 * are what another endpoint of the same toolkit answers the caller. Its keys as the toolkit file writes them.
 */
export const choicesFromSchema = z
  .strictObject({
    endpoint: z
      .string()
      .min(1)
      .max(512)
      .describe(
        'The path of an endpoint of this toolkit that answers the choices: an internal query or an http endpoint (not a command, not a template path).',
      ),
    value: z.string().min(1).max(128).optional().describe("The column (key) of each row that is a choice's value; absent: each row is the value itself."),
    label: z.string().min(1).max(128).optional().describe("The column (key) of each row shown to people (the console's select); default the value."),
    args: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be a field name'),
        z.union([z.string().max(1000), z.number(), z.boolean()]).describe('$payload.<field> (the value of another field of this call), or a fixed value.'),
      )
      .optional()
      .describe(
        "The choices endpoint's payload: its fields, each $payload.<field> of this endpoint's call or a fixed value; GET choices takes them as query parameters.",
      ),
    cache: durationMs.optional().describe('How long the choices are kept per caller and args (default 0: asked anew each call); at most 1h.'),
    query: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe('An internal endpoint with several pseudo queries answers an object keyed by name: the query whose rows are the choices.'),
  })
  .describe("The field's allowed values are the rows another endpoint of this toolkit answers the caller (called as the caller).");
export type ChoicesFromConfig = z.infer<typeof choicesFromSchema>;

/** The longest `cache`: a caller's lost access shows within it. */
export const MAX_CHOICES_CACHE_MS = 3_600_000;

/** One arg of the choices call: another field of the payload, or a fixed value. */
export type ChoiceArg = { field: string } | { fixed: string | number | boolean };

/** A field's choices_from, compiled: the payload fields it reads are known, so a change of them reloads a form. */
export interface CompiledChoicesFrom {
  endpoint: string;
  value?: string;
  label?: string;
  args: ReadonlyArray<readonly [name: string, arg: ChoiceArg]>;
  cacheMs: number;
  query?: string;
}

const PAYLOAD_REFERENCE = /^\$payload\.([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * Compiles one field's choices_from: its args' `$payload.<field>` name other fields that can reach the endpoint
 * (allowed_fields, when set), never the field itself. That the endpoint exists is checked with the whole toolkit
 * (choiceSourceProblems).
 */
export function compileChoicesFrom(
  field: string,
  config: ChoicesFromConfig,
  allowed: ReadonlySet<string> | undefined,
  issues: Issue[],
  at: Array<string | number>,
): CompiledChoicesFrom {
  const args: Array<readonly [string, ChoiceArg]> = [];
  for (const [name, raw] of Object.entries(config.args ?? {})) {
    const reference = typeof raw === 'string' ? PAYLOAD_REFERENCE.exec(raw)?.[1] : undefined;
    if (typeof raw === 'string' && raw.startsWith('$') && !reference)
      issues.push({ path: [...at, 'args', name], message: `must be $payload.<field> or a fixed value, not ${raw.slice(0, 64)}` });
    else if (reference === field) issues.push({ path: [...at, 'args', name], message: `${field}'s choices cannot depend on ${field} itself` });
    else if (reference && allowed && !allowed.has(reference))
      issues.push({ path: [...at, 'args', name], message: `${reference} is not in client_filter.allowed_fields, so no call ever has it` });
    args.push([name, reference ? { field: reference } : { fixed: raw }]);
  }
  if ((config.cache ?? 0) > MAX_CHOICES_CACHE_MS) issues.push({ path: [...at, 'cache'], message: 'must be at most 1h' });
  return {
    endpoint: config.endpoint,
    ...(config.value !== undefined && { value: config.value }),
    ...(config.label !== undefined && { label: config.label }),
    args,
    cacheMs: config.cache ?? 0,
    ...(config.query !== undefined && { query: config.query }),
  };
}

/** What choiceSourceProblems needs to know of an endpoint of the toolkit. */
export interface ChoiceSourceCandidate {
  path: string;
  methods: readonly string[];
  template: boolean;
  /** Its type runs commands (audited by default: exec, ssh) or runs as a job: never a source of choices. */
  runsCommands: boolean;
  hasChoices: boolean;
}

/**
 * Why `choices_from.endpoint` cannot be a source of choices, or undefined: it must be an exact path of this toolkit
 * taking GET or POST, answering data without running a command (a form asks it on every change), and without
 * choices of its own (no chain of calls).
 */
export function choiceSourceProblem(endpoint: string, self: string, candidates: ReadonlyMap<string, ChoiceSourceCandidate>): string | undefined {
  if (endpoint === self) return 'cannot be the endpoint itself';
  const target = candidates.get(endpoint);
  if (!target) return `this toolkit has no endpoint ${endpoint}`;
  if (target.template) return `${endpoint} is a template path; name an exact one`;
  if (!target.methods.includes('GET') && !target.methods.includes('POST')) return `${endpoint} takes neither GET nor POST`;
  if (target.runsCommands) return `${endpoint} runs a command; choices come from an internal query or an http endpoint`;
  if (target.hasChoices) return `${endpoint} has choices_from fields itself; choices come from an endpoint without`;
  return undefined;
}

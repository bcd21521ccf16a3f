import { durationMs, invalidPayload, secretOr, z, type RequestContext } from '@tkgate/core';
import type { MaxFailures } from './fleet/fleet-executor.js';
import { NODE_NAME } from './inventory/fleet-node.js';

/** `$payload.<field>`, `$path.<name>` (a path template's parameter) or `$context.<field>`: a value of the call. */
const REFERENCE = /^\$(payload|path|context)\.([A-Za-z_][A-Za-z0-9_]*)$/;
const LABEL_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
/** A certificate principal: no comma (ssh-keygen's list separator), no whitespace or control character. */
// eslint-disable-next-line no-control-regex
const PRINCIPAL = /^[^,\s\x00-\x1f\x7f]{1,128}$/;
const USER = /^[A-Za-z0-9._][A-Za-z0-9._@-]*$/;

const labelValue = z.union([z.string().max(256), z.number(), z.boolean()]);

/**
 * A `type: ssh` endpoint (docs/fleet.md, "Parallelism and failures" and "What each node runs"). Runs are implied (`run: sync` is refused); `command` is
 * an argv whose elements may each be a reference (`$payload.x`, `$path.x`, `$context.x`) replaced by that value;
 * `nodes.match` values may be references too.
 */
export const sshConfigSchema = z
  .strictObject({
    nodes: z
      .strictObject({
        match: z
          .record(z.string().regex(LABEL_KEY, 'a label key is letters, digits and _ . -, starting with a letter or _'), labelValue)
          .optional()
          .describe('Labels a node must all have, each equal to its value ($payload.x, $path.x or $context.x allowed).'),
        names: z
          .array(z.string().regex(NODE_NAME, 'must be a node name'))
          .min(1)
          .max(10_000)
          .optional()
          .describe('The nodes a run may take, by name (with match: those of them that match).'),
        max: z.number().int().min(1).optional().describe('The most nodes a run may take; more is 400 too_many_nodes.'),
      })
      .describe('Which nodes of the inventory a run takes; fixed when the run is created.'),
    command: z
      .array(z.string().min(1))
      .min(1)
      .describe('The argv run on each node, each element quoted for the remote shell; an element may be $payload.x, $path.x or $context.x.'),
    context: z
      .enum(['stdin', 'argument', 'none'])
      .default('stdin')
      .describe('Where the request context (JSON) goes: stdin (default), the last argument, or nowhere.'),
    run: z
      .enum(['async'], { message: 'ssh endpoints always run as runs: run may only be async' })
      .default('async')
      .describe('Always async: a call answers 202 with a run.'),
    parallel: z.number().int().min(1).max(1_000).default(10).describe('Nodes at once (default 10).'),
    keep_going: z.boolean().default(false).describe('false (default): no new node starts once more than max_failures nodes failed.'),
    max_failures: z
      .union([z.number(), z.string()])
      .transform((value, ctx): MaxFailures => {
        const percent = typeof value === 'string' ? /^(\d{1,3}(\.\d{1,2})?)%$/.exec(value) : null;
        if (typeof value === 'number' ? Number.isInteger(value) && value >= 0 : percent && Number(percent[1]) <= 100) return value as MaxFailures;
        ctx.addIssue({ code: 'custom', message: 'must be a count (0 or more) or a percentage from 0% to 100% such as "10%"' });
        return z.NEVER;
      })
      .meta({
        anyOf: [
          { type: 'integer', minimum: 0 },
          { type: 'string', pattern: '^\\d{1,3}(\\.\\d{1,2})?%$' },
        ],
      })
      .default(0)
      .describe('Failures tolerated before the run stops starting nodes: a count, or "10%" of the selected nodes (rounded down).'),
    node_timeout: durationMs.default(600_000).describe('Per node (default 10m): past it the node ends timed_out.'),
    connect_timeout: durationMs
      .refine((ms) => ms >= 1_000, 'must be at least 1s')
      .default(10_000)
      .describe('To reach a node (default 10s); also how soon a vanished node is noticed (SSH keepalives).'),
    timeout: durationMs.optional().describe('The whole run (default 1h).'),
    max_output_bytes: z.number().int().min(1).default(1_048_576).describe('Output kept per node (default 1 MiB); past it the command goes on.'),
    max_concurrency: z.number().int().min(1).default(4).describe('Running runs of this endpoint at once, across all instances (default 4).'),
    max_queued: z.number().int().min(0).default(100).describe('Runs waiting, across all instances (default 100); past it 503 busy.'),
    concurrency_key: z
      .string()
      .regex(REFERENCE, 'must be $payload.<field>, $context.<field> or $path.<name>')
      .optional()
      .describe('Runs with one value of this field run one at a time, oldest first.'),
    runs: z
      .strictObject({
        view_power: z.number().int().optional().describe("Power that sees this endpoint's runs besides their caller (default auth.admin_power)."),
        cancel_power: z.number().int().optional().describe("Power that cancels this endpoint's runs besides their caller (default auth.admin_power)."),
      })
      .optional()
      .describe("Who besides the caller sees and cancels this endpoint's runs."),
    ssh: z
      .strictObject({
        user: z.string().min(1).max(64).regex(USER, 'must be a user name').optional().describe("The login name on every node (else each node's user)."),
        key: secretOr(z.string().min(1)).optional().describe('A private key (OpenSSH or PEM, unencrypted), best a secret: { secret: "file:keys/deploy" }.'),
        certificate: z
          .strictObject({
            ca_key: secretOr(z.string().min(1)).describe('The CA private key that signs each run\'s certificate: { secret: "env:TKGATE_SSH_CA" }.'),
            principals: z
              .array(z.string().regex(PRINCIPAL, 'a principal has no comma, whitespace or control character'))
              .min(1)
              .max(32)
              .describe('The principals the certificate names (user names the nodes let it log in as).'),
            valid_for: durationMs
              .refine((ms) => ms >= 60_000, 'must be at least 1m')
              .default(900_000)
              .describe('How long a certificate is valid after the run starts (default 15m); it is valid from a minute before.'),
          })
          .optional()
          .describe('A certificate made for each run: key id "tkgate run=<id> user=<username>", no forwarding, no pty.'),
      })
      .refine((ssh) => (ssh.key === undefined) !== (ssh.certificate === undefined), { message: 'give ssh.key or ssh.certificate (one of them)' })
      .describe('How the gateway logs in to the nodes.'),
  })
  .describe('Runs one command on many nodes over SSH (docs/fleet.md).');

export type SshConfig = z.infer<typeof sshConfigSchema>;

/** The default of the whole run's `timeout`. */
export const DEFAULT_RUN_TIMEOUT_MS = 3_600_000;

/** The references an endpoint's command and selection name: what `check` verifies the call can hold. */
export function referencesOf(config: SshConfig): Array<{ kind: 'payload' | 'path' | 'context'; name: string; at: Array<string | number> }> {
  const found: Array<{ kind: 'payload' | 'path' | 'context'; name: string; at: Array<string | number> }> = [];
  const look = (value: unknown, at: Array<string | number>) => {
    const match = typeof value === 'string' ? REFERENCE.exec(value) : null;
    if (match) found.push({ kind: match[1] as 'payload' | 'path' | 'context', name: match[2]!, at });
  };
  config.command.forEach((part, index) => look(part, ['command', index]));
  for (const [key, value] of Object.entries(config.nodes.match ?? {})) look(value, ['nodes', 'match', key]);
  return found;
}

/**
 * A value of the call for a reference, else the value as written. A missing or non-scalar value is 400
 * `invalid_payload` naming the field: a command's argument or a label is text, never a structure.
 */
export function resolveValue(value: string | number | boolean, context: RequestContext, where: string): string {
  const match = typeof value === 'string' ? REFERENCE.exec(value) : null;
  if (!match) return String(value);
  const [, kind, name] = match as unknown as [string, 'payload' | 'path' | 'context', string];
  const holder =
    kind === 'payload'
      ? (context.payload as Record<string, unknown>)
      : kind === 'path'
        ? ((context as { path_params?: Record<string, unknown> }).path_params ?? {})
        : (context as Record<string, unknown>);
  const found = Object.hasOwn(holder ?? {}, name) ? holder[name] : undefined;
  const field = kind === 'payload' ? name : `$${kind}.${name}`;
  if (found === undefined || found === null) throw invalidPayload([{ field, rule: 'required', message: `${where} needs ${field}` }]);
  if (typeof found !== 'string' && typeof found !== 'number' && typeof found !== 'boolean') {
    throw invalidPayload([{ field, rule: 'type', message: `${field} must be text, a number or a boolean (it goes into ${where})` }]);
  }
  return String(found);
}

/** The command's argv and the selection's labels for one call. */
export function resolveCall(config: SshConfig, context: RequestContext): { argv: string[]; match: Record<string, string> } {
  const argv = config.command.map((part, index) => resolveValue(part, context, `command element ${index}`));
  const match = Object.fromEntries(Object.entries(config.nodes.match ?? {}).map(([key, value]) => [key, resolveValue(value, context, `nodes.match.${key}`)]));
  for (const [index, part] of argv.entries()) {
    if (part.includes('\0')) throw invalidPayload([{ field: config.command[index]!, rule: 'type', message: 'a command argument cannot hold a NUL character' }]);
  }
  return { argv, match };
}

/** plugin_options."@tkgate/plugin-ssh". */
export const sshOptionsSchema = z.strictObject({
  ssh: z.string().min(1).default('ssh').describe("OpenSSH's client (looked up in PATH unless a path)."),
  ssh_keygen: z.string().min(1).default('ssh-keygen').describe('ssh-keygen, which makes and signs run certificates.'),
  work_directory: z.string().min(1).optional().describe("Where runs' private directories are made (default: the system's temporary directory)."),
});

export type SshOptions = z.infer<typeof sshOptionsSchema>;

import { durationMs, secretOr, z } from '@tkgate/core';

/** Where the command finds the request context (JSON). */
export const CONTEXT_PLACES = ['argument', 'stdin', 'env', 'none'] as const;
/** The variable holding the context with `context: env`. */
export const CONTEXT_VARIABLE = 'TKGATE_CONTEXT';

/**
 * A `type: exec` endpoint. `command` as a list runs that program directly (no shell); as a string it runs
 * under `/bin/sh -c`. `context` says where the request context goes: by default appended as the last
 * argument (the string's "$1"), so request data is never part of a shell string; or on stdin, in
 * TKGATE_CONTEXT, or nowhere (`uptime` takes no argument).
 */
export const execConfigSchema = z
  .strictObject({
    command: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .describe(
        'A list runs that program directly (the context JSON appended as the last argument, by default); a string runs under /bin/sh -c (the context as "$1", by default).',
      ),
    context: z
      .enum(CONTEXT_PLACES)
      .default('argument')
      .describe(
        'Where the context JSON goes: argument (default: the last argument, "$1" of a string command), stdin (written to stdin, no argument), env (the variable TKGATE_CONTEXT, no argument) or none (nothing: for commands that take no input).',
      ),
    run: z
      .enum(['sync', 'async'])
      .default('sync')
      .describe('sync: the call waits for the command and answers its output; async: the call answers 202 with a run to follow (docs/runs.md).'),
    timeout: durationMs.optional().describe('The command is killed (its whole process group) after this long (default 10s; 1h with run: async).'),
    max_output_bytes: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'sync: the most stdout accepted (default 1 MiB), more is 500 exec_failed; async: the output kept per run (default 16 MiB), past it the command goes on.',
      ),
    cwd: z.string().min(1).optional().describe('The working directory of the command; must exist.'),
    /** The child's whole environment, plus PATH: nothing else of the gateway's environment leaks to it. */
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), secretOr(z.string()))
      .default({})
      .describe(
        'The command\'s whole environment, plus PATH: nothing else of the gateway\'s environment. A value may be a secret kept outside the file: { secret: "env:NAME" } or { secret: "file:PATH" }; what the command prints of it is masked as ***.',
      ),
    /** Also write the context to stdin (needed for contexts over the per-argument limit). */
    stdin: z
      .boolean()
      .default(false)
      .describe('With context: argument, true also writes the context JSON to stdin (the last argument is "-" for contexts over 128 KiB).'),
    max_concurrency: z.number().int().min(1).default(4).describe('Processes of this endpoint at once (default 4); with run: async, across all instances.'),
    max_queue: z.number().int().min(0).default(32).describe('Requests waiting for a place (default 32); past it 503 busy.'),
    max_queued: z.number().int().min(0).optional().describe('run: async: runs waiting, across all instances (default 100); past it 503 busy.'),
    concurrency_key: z
      .string()
      .regex(/^\$(payload|context|path)\.[A-Za-z_][A-Za-z0-9_]*$/, 'must be $payload.<field>, $context.<field> or $path.<name>')
      .optional()
      .describe(
        'run: async: runs with one value of this field run one at a time, oldest first ($payload.<field>, $context.<field> or $path.<name> of a path template).',
      ),
    runs: z
      .strictObject({
        view_power: z.number().int().optional().describe("Power that sees this endpoint's runs besides their caller (default auth.admin_power)."),
        cancel_power: z.number().int().optional().describe("Power that cancels this endpoint's runs besides their caller (default auth.admin_power)."),
      })
      .optional()
      .describe('run: async: who besides the caller sees and cancels the runs.'),
  })
  .refine((config) => !config.stdin || config.context === 'argument', {
    path: ['stdin'],
    message: 'stdin: true goes with context: argument only (context: stdin writes the context to stdin alone)',
  });

/** Defaults that depend on `run`: a job may take an hour and keep 16 MiB of output; a call, 10 s and 1 MiB. */
export const timeoutOf = (config: ExecConfig): number => config.timeout ?? (config.run === 'async' ? 3_600_000 : 10_000);
export const maxOutputOf = (config: ExecConfig): number => config.max_output_bytes ?? (config.run === 'async' ? 16_777_216 : 1_048_576);
export const DEFAULT_MAX_QUEUED = 100;

export type ExecConfig = z.infer<typeof execConfigSchema>;

/** plugin_options."@tkgate/plugin-exec": limits across all exec endpoints of the gateway. */
export const execOptionsSchema = z.strictObject({
  max_processes: z.number().int().min(1).default(16),
  max_queue: z.number().int().min(0).default(256),
  /** Small processes that do the spawning, so the gateway's event loop never waits on fork(). */
  spawn_helpers: z.number().int().min(1).max(64).default(2),
  /**
   * Which spawn helpers: "native" is the small C program built at install time (cheaper per command),
   * "node" the Node helpers, "auto" the native one when it was built, else the Node ones.
   */
  spawner: z.enum(['auto', 'native', 'node']).default('auto'),
});

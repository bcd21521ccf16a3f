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
    timeout: durationMs.default(10_000).describe('The command is killed (its whole process group) after this long (default 10s).'),
    max_output_bytes: z.number().int().min(1).default(1_048_576).describe('The most stdout accepted (default 1 MiB); more is 500 exec_failed.'),
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
    max_concurrency: z.number().int().min(1).default(4).describe('Processes of this endpoint at once (default 4).'),
    max_queue: z.number().int().min(0).default(32).describe('Requests waiting for a place (default 32); past it 503 busy.'),
  })
  .refine((config) => !config.stdin || config.context === 'argument', {
    path: ['stdin'],
    message: 'stdin: true goes with context: argument only (context: stdin writes the context to stdin alone)',
  });

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

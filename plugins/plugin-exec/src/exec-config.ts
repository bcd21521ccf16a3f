import { durationMs, z } from '@tkgate/core';

/**
 * A `type: exec` endpoint. `command` as a list runs that program directly (no shell) with the context JSON
 * appended as the last argument; as a string it runs under `/bin/sh -c` with the context as "$1", so request
 * data is never part of a shell string.
 */
export const execConfigSchema = z.strictObject({
  command: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  timeout: durationMs.default(10_000),
  max_output_bytes: z.number().int().min(1).default(1_048_576),
  cwd: z.string().min(1).optional(),
  /** The child's whole environment, plus PATH: nothing else of the gateway's environment leaks to it. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), z.string()).default({}),
  /** Also write the context to stdin (needed for contexts over the per-argument limit). */
  stdin: z.boolean().default(false),
  max_concurrency: z.number().int().min(1).default(4),
  max_queue: z.number().int().min(0).default(32),
});

export type ExecConfig = z.infer<typeof execConfigSchema>;

/** plugin_options."@tkgate/plugin-exec": limits across all exec endpoints of the gateway. */
export const execOptionsSchema = z.strictObject({
  max_processes: z.number().int().min(1).default(16),
  max_queue: z.number().int().min(0).default(256),
  /** Small processes that do the spawning, so the gateway's event loop never waits on fork(). */
  spawn_helpers: z.number().int().min(1).max(64).default(2),
});

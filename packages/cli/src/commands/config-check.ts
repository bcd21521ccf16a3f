import path from 'node:path';
import { checkToolkitDirectory, createLogger, describeProblem, problemFields, type ToolkitProblem } from '@tkgate/core';
import type { Command } from './command.js';
import { configFrom } from './context.js';
import { UsageError } from '../cli-error.js';

/** How each problem is printed: a line a person (or an editor's problem matcher) reads, or one JSON object per line. */
const FORMATS: Record<string, (problem: ToolkitProblem) => string> = {
  text: (problem) => describeProblem(problem) + (problem.frame ? `\n${problem.frame}\n` : '') + '\n',
  json: (problem) => JSON.stringify(problemFields(problem)) + '\n',
};

/** Warnings refuse nothing: `file: path: warning: message`, or with --format json the problem's fields and `"severity":"warning"`. */
const WARNING_FORMATS: Record<string, (warning: ToolkitProblem) => string> = {
  text: (warning) => `${warning.file}: ${warning.path}: warning: ${warning.message}\n`,
  json: (warning) => JSON.stringify({ ...problemFields(warning), severity: 'warning' }) + '\n',
};

/**
 * Lists every problem of every toolkit file and exits 1 if there is any (0: none; 2: a usage error); warnings
 * are listed after them and refuse nothing.
 * `--format json` prints one JSON object per problem and line (file, line, column, path, endpoint, message,
 * hint; null where there is none) and nothing else on stdout, for editors and CI.
 */
export const configCheck: Command = {
  name: 'config check',
  usage: 'config check [DIR|FILE] [--format text|json]',
  summary: 'validate toolkit files (default: toolkits.dir), or one file, as start would; every error listed',
  options: { format: { type: 'string' } },
  operands: { min: 0, max: 1 },
  async run({ values, operands: [dir] }) {
    const format = FORMATS[String(values.format ?? 'text')];
    if (!format) throw new UsageError(`--format is text or json, not ${String(values.format)}`);
    const formatWarning = WARNING_FORMATS[String(values.format ?? 'text')]!;
    const config = configFrom(values);
    const target = dir ? path.resolve(dir) : config.toolkits.dir;
    const result = await checkToolkitDirectory(
      target,
      config,
      createLogger('error', (line) => process.stderr.write(line + '\n')),
    );
    for (const problem of result.problems) process.stdout.write(format(problem));
    for (const warning of result.warnings) process.stdout.write(formatWarning(warning));
    if (result.problems.length > 0) {
      process.stderr.write(`tkgate config check: ${result.problems.length} problem(s) in ${target}\n`);
      return 1;
    }
    if (values.format !== 'json') process.stdout.write(`${result.files} file(s), toolkits: ${result.toolkits.join(', ') || 'none'}: OK\n`);
    return 0;
  },
};

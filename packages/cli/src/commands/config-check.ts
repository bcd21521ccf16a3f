import path from 'node:path';
import { checkToolkitDirectory, createLogger } from '@tkgate/core';
import type { Command } from './command.js';
import { configFrom } from './context.js';

/** Lists every problem of every toolkit file (one per line) and exits 1 if there is any; warnings are listed and refuse nothing. */
export const configCheck: Command = {
  name: 'config check',
  usage: 'config check [DIR|FILE]',
  summary: 'validate toolkit files (default: toolkits.dir), or one file, as start would; every error listed',
  options: {},
  operands: { min: 0, max: 1 },
  async run({ values, operands: [dir] }) {
    const config = configFrom(values);
    const target = dir ? path.resolve(dir) : config.toolkits.dir;
    const result = await checkToolkitDirectory(
      target,
      config,
      createLogger('error', (line) => process.stderr.write(line + '\n')),
    );
    for (const problem of result.problems) process.stdout.write(`${problem.file}: ${problem.path || '(file)'}: ${problem.message}\n`);
    for (const warning of result.warnings) process.stdout.write(`${warning.file}: ${warning.path}: warning: ${warning.message}\n`);
    if (result.problems.length > 0) {
      process.stderr.write(`tkgate config check: ${result.problems.length} problem(s) in ${target}\n`);
      return 1;
    }
    process.stdout.write(`${result.files} file(s), toolkits: ${result.toolkits.join(', ') || 'none'}: OK\n`);
    return 0;
  },
};

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './cli-error.js';
import { commands, type Command, type OptionValues } from './commands/index.js';

const GLOBAL_OPTIONS = {
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

function usage(): string {
  const lines = Object.values(commands).map((command) => `  tkgate ${command.usage}\n      ${command.summary}`);
  return ['usage:', ...lines, '', 'Every command takes --config FILE (or TKGATE_CONFIG).'].join('\n');
}

/** Finds the longest command name that the words start with ("user add" before "user"). */
function findCommand(words: string[]): { command: Command; rest: string[] } | undefined {
  for (let take = Math.min(2, words.length); take >= 1; take--) {
    const command = commands[words.slice(0, take).join(' ')];
    if (command) return { command, rest: words.slice(take) };
  }
  return undefined;
}

const ALL_OPTIONS = Object.assign({}, GLOBAL_OPTIONS, ...Object.values(commands).map((command) => command.options));

/** Runs one tkgate command; every failure is one line on stderr and a non-zero exit code. */
export async function run(argv: string[]): Promise<number> {
  const loose = parseArgs({ args: argv, options: ALL_OPTIONS, allowPositionals: true, strict: false });
  const found = findCommand(loose.positionals.slice(0, 2));
  const helpAsked = loose.values.help === true || argv.length === 0;
  if (helpAsked) {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  if (!found) {
    const words = loose.positionals.slice(0, 2).join(' ');
    process.stderr.write(`tkgate: unknown command ${JSON.stringify(words)} (tkgate --help lists them)\n`);
    return 2;
  }
  const { command } = found;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...GLOBAL_OPTIONS, ...command.options },
      allowPositionals: true,
      strict: true,
    });
    const operands = positionals.slice(command.name.split(' ').length);
    if (operands.length < command.operands.min || operands.length > command.operands.max) {
      throw new UsageError(`usage: tkgate ${command.usage}`);
    }
    return (await command.run({ values: values as OptionValues, operands })) ?? 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`tkgate ${command.name}: ${message.split('\n').join('; ')}\n`);
    return err instanceof UsageError || String((err as { code?: string }).code).startsWith('ERR_PARSE_ARGS') ? 2 : 1;
  }
}

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './cli-error.js';
import { commands, type Command, type OptionValues } from './commands/index.js';
import { commandHelp, groupHelp, overview } from './help.js';
import { nearest } from './suggest.js';
import { VERSION } from './version.js';

const GLOBAL_OPTIONS = {
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

const ALL_OPTIONS = Object.assign({}, GLOBAL_OPTIONS, ...Object.values(commands).map((command) => command.options));

/** Finds the longest command name that the words start with ("user add" before "user"). */
function findCommand(words: string[]): Command | undefined {
  for (let take = Math.min(2, words.length); take >= 1; take--) {
    const command = commands[words.slice(0, take).join(' ')];
    if (command) return command;
  }
  return undefined;
}

/** The commands whose first word is `group` ("user" gives user add, user passwd, ...). */
const groupOf = (group: string) => Object.values(commands).filter((command) => command.name.split(' ')[0] === group && command.name !== group);

/** Help for the words after `help` (or before `--help`): a command, a group, or everything. */
function helpFor(words: string[]): { text: string; known: boolean } {
  const command = findCommand(words);
  if (command && command.name.split(' ').length >= Math.min(words.length, 2)) return { text: commandHelp(command), known: true };
  const group = words[0] === undefined ? [] : groupOf(words[0]);
  if (words.length === 1 && group.length > 0) return { text: groupHelp(words[0]!, group), known: true };
  return { text: overview(Object.values(commands)), known: words.length === 0 };
}

/** One line for a command that does not exist, with the nearest one when there is one. */
function unknownCommand(words: string[]): string {
  const typed = words.join(' ');
  const names = Object.keys(commands);
  const groups = new Set(names.map((name) => name.split(' ')[0]!));
  const guess = nearest(typed, names) ?? (groups.has(words[0]!) ? undefined : nearest(words[0]!, [...groups, 'help']));
  const hint = guess ? `; did you mean "tkgate ${guess}"?` : '';
  const within = groups.has(words[0]!) ? `tkgate ${words[0]} --help` : 'tkgate help';
  return `tkgate: unknown command "${typed}"${hint} (${within} lists the commands)`;
}

/** node:util's parse errors in tkgate's words. */
function describeOptionError(err: Error & { code?: string }, command: Command): string {
  const option = /'(-{1,2}[^'\s]+)/.exec(err.message)?.[1] ?? 'an option';
  const more = `tkgate ${command.name} --help lists its options`;
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const known = Object.keys({ ...GLOBAL_OPTIONS, ...command.options }).map((name) => `--${name}`);
    const guess = nearest(option, known);
    return `unknown option ${option}${guess ? `; did you mean ${guess}?` : ''} (${more})`;
  }
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    return `option ${option} ${/argument missing/.test(err.message) ? 'needs a value' : 'takes no value'} (${more})`;
  return `${err.message} (${more})`;
}

/** Runs one tkgate command; every failure is one line on stderr and a non-zero exit code. */
export async function run(argv: string[]): Promise<number> {
  if (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version') {
    process.stdout.write(`tkgate ${VERSION}\n`);
    return 0;
  }
  const loose = parseArgs({ args: argv, options: ALL_OPTIONS, allowPositionals: true, strict: false });
  const words = loose.positionals;
  if (words[0] === 'help' || argv.length === 0 || (words.length === 0 && loose.values.help === true)) {
    const asked = words.slice(1, 3);
    const { text, known } = helpFor(asked);
    if (!known) {
      process.stderr.write(unknownCommand(asked) + '\n');
      return 2;
    }
    process.stdout.write(text);
    return 0;
  }
  const command = findCommand(words.slice(0, 2));
  if (loose.values.help === true) {
    const { text, known } = helpFor(command ? command.name.split(' ') : words.slice(0, 2));
    if (known) {
      process.stdout.write(text);
      return 0;
    }
  }
  if (!command) {
    process.stderr.write(unknownCommand(words.slice(0, 2)) + '\n');
    return 2;
  }
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: { ...GLOBAL_OPTIONS, ...command.options }, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError(describeOptionError(err as Error, command));
    }
    const operands = parsed.positionals.slice(command.name.split(' ').length);
    if (operands.length < command.operands.min || operands.length > command.operands.max) {
      throw new UsageError(`usage: tkgate ${command.usage} (tkgate ${command.name} --help explains)`);
    }
    return (await command.run({ values: parsed.values as OptionValues, operands })) ?? 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`tkgate ${command.name}: ${message.split('\n').join('; ')}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
}

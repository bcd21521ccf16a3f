import type { Command } from './commands/command.js';

const FOOTER = 'Every command takes --config FILE (or TKGATE_CONFIG) and --help. tkgate --version prints the version.';

/** `tkgate help`: every command, one summary each. */
export function overview(commands: Command[]): string {
  const lines = commands.map((command) => `  tkgate ${command.usage}\n      ${command.summary}`);
  return ['usage: tkgate COMMAND [OPTIONS]', '', 'commands:', ...lines, '', FOOTER, ''].join('\n');
}

/** `tkgate help user add` or `tkgate user add --help`: one command. */
export function commandHelp(command: Command): string {
  return [`usage: tkgate ${command.usage}`, '', `  ${command.summary}`, '', FOOTER, ''].join('\n');
}

/** `tkgate help user` or `tkgate user --help`: the commands of one group. */
export function groupHelp(group: string, commands: Command[]): string {
  const lines = commands.map((command) => `  tkgate ${command.usage}\n      ${command.summary}`);
  return [`tkgate ${group} commands:`, ...lines, '', FOOTER, ''].join('\n');
}

import { execFileSync } from 'node:child_process';
import { accessSync, constants, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { repoRoot, tempDir } from '../support/paths.js';

const version = (JSON.parse(readFileSync(path.join(repoRoot, 'packages/cli/package.json'), 'utf8')) as { version: string }).version;

describe('tkgate CLI: version, help, suggestions and option errors', () => {
  it('prints its version for --version, -v and version', async () => {
    for (const flag of ['--version', '-v', 'version']) {
      const result = await runCli([flag]);
      expect(result.code, flag).to.equal(0);
      expect(result.stdout, flag).to.equal(`tkgate ${version}\n`);
    }
  });

  it('help lists every command; COMMAND --help explains every command; help GROUP lists a group', async function () {
    this.timeout(180_000);
    const overview = await runCli(['help']);
    expect(overview.code).to.equal(0);
    const names = [...overview.stdout.matchAll(/^ {2}tkgate ((?:[a-z]+)(?: [a-z]+)?)/gm)].map((match) => match[1]!.replace(/ [A-Z].*$/, ''));
    const commands = names.map((name) =>
      name
        .split(' ')
        .filter((word) => /^[a-z]+$/.test(word))
        .join(' '),
    );
    expect(commands).to.include.members([
      'start',
      'migrate',
      'user add',
      'user passwd',
      'user list',
      'group assoc',
      'sessions clear',
      'config check',
      'example setup',
    ]);
    // Every command's --help, and help for the groups and one command; four at a time (each run loads all of tkgate).
    const runs: Array<[string[], RegExp]> = [
      ...commands.map((command): [string[], RegExp] => [[...command.split(' '), '--help'], new RegExp(`^usage: tkgate ${command}( |\\n)[^]*\\n {2}\\S`)]),
      [['help', 'user'], /^tkgate user commands:\n {2}tkgate user add /],
      [['group', '--help'], /^tkgate group commands:\n {2}tkgate group add /],
      [['help', 'user', 'add'], /^usage: tkgate user add NAME/],
    ];
    for (let i = 0; i < runs.length; i += 4) {
      await Promise.all(
        runs.slice(i, i + 4).map(async ([args, expected]) => {
          const result = await runCli(args);
          expect(result.code, args.join(' ')).to.equal(0);
          expect(result.stdout, args.join(' ')).to.match(expected);
        }),
      );
    }
  });

  it('answers a mistyped command with one line and the nearest command', async () => {
    const cases: Array<[string[], string]> = [
      [['strat'], 'tkgate: unknown command "strat"; did you mean "tkgate start"? (tkgate help lists the commands)\n'],
      [['user', 'ad', 'x'], 'tkgate: unknown command "user ad"; did you mean "tkgate user add"? (tkgate user --help lists the commands)\n'],
      [['hepl'], 'tkgate: unknown command "hepl"; did you mean "tkgate help"? (tkgate help lists the commands)\n'],
      [['frobnicate'], 'tkgate: unknown command "frobnicate" (tkgate help lists the commands)\n'],
    ];
    for (const [args, line] of cases) {
      const result = await runCli(args, { cwd: tempDir() });
      expect(result.code, args.join(' ')).to.equal(2);
      expect(result.stderr, args.join(' ')).to.equal(line);
    }
  });

  it('answers an unknown option or a missing value in its own words, with the nearest option', async () => {
    const unknown = await runCli(['user', 'add', 'x', '--powr', '3'], { cwd: tempDir() });
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.equal('tkgate user add: unknown option --powr; did you mean --power? (tkgate user add --help lists its options)\n');
    const missing = await runCli(['start', '--config'], { cwd: tempDir() });
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.equal('tkgate start: option --config needs a value (tkgate start --help lists its options)\n');
    for (const result of [unknown, missing]) expect(result.stderr).not.to.match(/positional argument|ERR_PARSE_ARGS/);
  });

  it('runs as npx tkgate in this checkout: node_modules/.bin/tkgate links the executable bin of @tkgate/cli', () => {
    const link = path.join(repoRoot, 'node_modules/.bin/tkgate');
    const bin = path.join(repoRoot, 'packages/cli/bin/tkgate.js');
    expect(realpathSync(link)).to.equal(realpathSync(bin));
    accessSync(bin, constants.X_OK);
    expect(readFileSync(bin, 'utf8')).to.match(/^#!\/usr\/bin\/env node\n/);
    expect(execFileSync(link, ['--version'], { encoding: 'utf8' })).to.equal(`tkgate ${version}\n`);
    const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    expect(manifest.dependencies).to.have.property('@tkgate/cli');
  });
});

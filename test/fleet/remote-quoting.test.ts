import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ReportFilter, shellQuote } from '@tkgate/plugin-ssh/engine';

const run = promisify(execFile);

/** The arguments a shell sees after reading `printf '%s\0' <quoted...>`: each one NUL-terminated. */
async function argumentsSeenBy(shell: string, values: readonly string[]): Promise<string[]> {
  const { stdout } = await run(shell, ['-c', `printf '%s\\0' ${values.map(shellQuote).join(' ')}`], { encoding: 'buffer', maxBuffer: 16 * 1024 * 1024 });
  return (stdout as unknown as Buffer).toString('utf8').split('\0').slice(0, -1);
}

const HOSTILE = [
  '; touch pwned',
  '$(id)',
  '`id`',
  "it's",
  "'",
  "''\\''",
  '"double"',
  'a\nb',
  '\n',
  '\\',
  '*',
  '~',
  '-n',
  '$HOME',
  '${IFS}',
  '!',
  '#',
  '&& echo no',
  '| cat',
  '> file',
  ' lead and trail ',
  '\t',
  'ünïcødé ✓',
];

describe('remote quoting (each argv element quoted for the remote POSIX shell)', () => {
  for (const shell of ['/bin/sh', '/bin/bash']) {
    it(`${shell} reads every hostile value back as one literal argument`, async () => {
      expect(await argumentsSeenBy(shell, HOSTILE)).to.deep.equal(HOSTILE);
    });
  }

  it('holds for random values of every byte but NUL (fuzz, through dash and bash)', async () => {
    const values: string[] = [];
    for (let i = 0; i < 300; i++) {
      // Mostly the characters a shell cares about, with random bytes (as UTF-8 text) among them.
      const special = [...`'"\\$\`;&|<>(){}[]*?~!# \t\n`];
      const length = 1 + (randomBytes(1)[0]! % 24);
      let value = '';
      for (let j = 0; j < length; j++) {
        const byte = randomBytes(1)[0]!;
        value += byte < 128 ? special[byte % special.length] : String.fromCodePoint(1 + ((byte * 7919) % 0x2fff));
      }
      values.push(value);
    }
    for (const shell of ['/bin/sh', '/bin/bash']) expect(await argumentsSeenBy(shell, values), shell).to.deep.equal(values);
  });

  it('refuses a NUL, which no argument can hold', () => {
    expect(() => shellQuote('a\0b')).to.throw(RangeError);
  });
});

describe("the wrapper's reports on stderr", () => {
  const token = '0123456789abcdef';
  const start = Buffer.from(`\x1etkgate ${token} start 4242\n`);
  const exit = Buffer.from(`\x1etkgate ${token} exit 3\n`);

  it('are taken out of the stream, whatever the chunks', () => {
    const whole = Buffer.concat([start, Buffer.from('before \x1e own separator\n'), Buffer.from('err line\n'), exit]);
    for (let size = 1; size <= whole.length; size++) {
      const filter = new ReportFilter(token);
      const passed: Buffer[] = [];
      for (let at = 0; at < whole.length; at += size) passed.push(filter.push(whole.subarray(at, at + size)));
      passed.push(filter.end());
      expect(Buffer.concat(passed).toString('latin1'), `chunks of ${size}`).to.equal('before \x1e own separator\nerr line\n');
      expect(filter.reports, `chunks of ${size}`).to.deep.equal({ startedGroup: 4242, exitStatus: 3 });
    }
  });

  it('are not made by another token or a line that only looks like one', () => {
    const filter = new ReportFilter(token);
    const text = `\x1etkgate ffffffffffffffff exit 0\n\x1etkgate ${token} exit zero\n\x1etkgate ${token} `;
    const passed = Buffer.concat([filter.push(Buffer.from(text)), filter.end()]).toString('latin1');
    expect(passed).to.equal(text);
    expect(filter.reports).to.deep.equal({});
  });
});

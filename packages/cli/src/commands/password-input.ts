import { createInterface } from 'node:readline';
import { UsageError } from '../cli-error.js';

/** The first line of standard input, without its line ending. */
async function firstLineOfStdin(): Promise<string> {
  const lines = createInterface({ input: process.stdin, terminal: false });
  try {
    for await (const line of lines) return line;
    return '';
  } finally {
    lines.close();
  }
}

/** Asks on the terminal without echoing what is typed. */
async function promptHidden(question: string): Promise<string> {
  process.stderr.write(question);
  process.stdin.setRawMode(true);
  process.stdin.resume();
  let typed = '';
  try {
    return await new Promise<string>((resolve, reject) => {
      process.stdin.on('data', (chunk: Buffer) => {
        for (const char of chunk.toString('utf8')) {
          if (char === '\r' || char === '\n') return resolve(typed);
          if (char === '\u0003') return reject(new Error('cancelled'));
          typed = char === '\u007f' ? typed.slice(0, -1) : typed + char;
        }
      });
    });
  } finally {
    process.stdin.setRawMode(false);
    process.stdin.pause();
    process.stderr.write('\n');
  }
}

export async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) return firstLineOfStdin();
  if (!process.stdin.isTTY) throw new UsageError('no terminal to ask for the password: pipe it in with --password-stdin');
  return promptHidden('Password: ');
}

// Rewrites the generated part of a doc, between its start and end markers; with `--check` on the command
// line it only says whether that part is current (exit 1 if not), for the tests that keep docs honest.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));

/** `doc` relative to the repository root; `body` replaces what lies between the markers. */
export function writeGeneratedSection(doc, { start, end, body, command }) {
  const file = path.join(root, doc);
  const text = readFileSync(file, 'utf8');
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${doc} lacks the markers ${start} … ${end}`);
  const next = `${text.slice(0, from + start.length)}\n${body}\n${text.slice(to)}`;
  if (process.argv.includes('--check')) {
    if (next !== text) {
      process.stderr.write(`${doc} is not current: run \`${command}\`\n`);
      process.exit(1);
    }
    process.stdout.write(`${doc} is current\n`);
  } else if (next !== text) {
    writeFileSync(file, next);
    process.stdout.write(`${doc} updated\n`);
  } else {
    process.stdout.write(`${doc} is current\n`);
  }
}

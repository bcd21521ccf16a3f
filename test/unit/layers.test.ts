import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const source = path.join(root, 'packages/core/src');

/**
 * The layers as docs/architecture.md draws them ("The layers inside core"), top first: each line of its
 * first code block starts with the layer's directories (`pipeline/`) and files (`app.ts`), then says what
 * they are. Read from the doc, so the doc and this guard cannot drift apart.
 */
function documentedLayers(): string[][] {
  const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## The layers inside core'));
  const block = section.slice(section.indexOf('```') + 3, section.indexOf('```', section.indexOf('```') + 3));
  return block
    .split('\n')
    .filter((line) => /^\S/.test(line))
    .map((line) => {
      const names: string[] = [];
      for (const token of line.split(/[\s,]+/)) {
        if (!/^[\w.-]+(\/|\.ts)$/.test(token)) break;
        names.push(token);
      }
      return names;
    });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** A module's layer name: its top directory under src/ (`auth/` for auth/oidc/...) or its file name. */
function layerName(file: string): string {
  const [first, ...rest] = path.relative(source, file).split(path.sep);
  return rest.length > 0 ? `${first}/` : first!.replace(/\.js$/, '.ts');
}

/** The relative modules a file imports, statically or dynamically, type-only imports included. */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => path.resolve(path.dirname(file), match[1]!));
}

describe('unit: core imports point down the documented layers (docs/architecture.md)', () => {
  const layers = documentedLayers();
  const layerOf = new Map(layers.flatMap((names, index) => names.map((name) => [name, index] as const)));

  it('reads the layers from the doc', () => {
    expect(layers.length).to.be.greaterThan(5);
    expect(layerOf.get('app.ts')).to.equal(0);
    expect(layerOf.get('http/')).to.be.greaterThan(layerOf.get('plugins/')!);
  });

  it('places every module of packages/core/src in a layer', () => {
    const unplaced = [...new Set(sourceFiles(source).map(layerName))].filter((name) => !layerOf.has(name));
    expect(unplaced, 'add them to the layers in docs/architecture.md').to.deep.equal([]);
  });

  it('has no import from a module of a higher layer', () => {
    const upward: string[] = [];
    for (const file of sourceFiles(source)) {
      const from = layerOf.get(layerName(file))!;
      for (const target of relativeImports(file)) {
        const to = layerOf.get(layerName(target));
        if (to === undefined || to < from) upward.push(`${path.relative(source, file)} -> ${path.relative(source, target)}`);
      }
    }
    expect(upward).to.deep.equal([]);
  });

  it('would see an upward import (the guard guards)', () => {
    const from = layerOf.get(layerName(path.join(source, 'db/migrate.ts')))!;
    const to = layerOf.get(layerName(path.join(source, 'plugins/plugin-loader.js')))!;
    expect(to).to.be.lessThan(from);
  });
});

/** Words after which a `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set(['return', 'typeof', 'case', 'in', 'of', 'new', 'delete', 'void', 'throw', 'yield', 'await', 'else', 'do']);

/**
 * A source file without its comments: the text of its string and template literals (where SQL is written), and
 * its code, where a literal that is one word stands as `'word'` and any other as `''` (where a driver name is
 * compared), each with its line. A small lexer: a `/` after an operand is a division, elsewhere a regular
 * expression, whose quotes start no string.
 */
function scanned(text: string): { strings: Array<{ text: string; line: number }>; code: string; lineAt: (offset: number) => number } {
  const strings: Array<{ text: string; line: number }> = [];
  const pieces: string[] = [];
  const pieceLines: number[] = [];
  let length = 0;
  const starts: number[] = [];
  let line = 1;
  let last = ''; // the last character of code, spaces aside
  let word = ''; // the word it ends, if any
  const emit = (piece: string) => {
    starts.push(length);
    pieces.push(piece);
    pieceLines.push(line);
    length += piece.length;
    if (piece.trim() === '') return;
    last = piece.at(-1)!;
    word = /^[\w$]+$/.test(piece) ? (/[\w$]$/.test(last) ? word + piece : piece) : '';
  };
  const literal = (value: string, from: number) => {
    strings.push({ text: value, line: from });
    emit(/^[\w-]+$/.test(value) ? `'${value}'` : "''");
  };
  const templates: number[] = []; // the brace depth at each open ${
  let depth = 0;
  let i = 0;
  /** A template's text up to its end or its next ${. */
  const readTemplate = () => {
    const from = line;
    let value = '';
    for (; i < text.length && text[i] !== '`' && !(text[i] === '$' && text[i + 1] === '{'); i++) {
      if (text[i] === '\\') value += text[i++];
      if (text[i] === '\n') line++;
      value += text[i];
    }
    literal(value, from);
    if (text[i] === '`') i++;
    else if (i < text.length) {
      i += 2;
      templates.push(depth);
    }
  };
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const close = text.indexOf('*/', i + 2);
      const end = close < 0 ? text.length : close + 2;
      for (; i < end; i++) if (text[i] === '\n') line++;
      emit(' ');
    } else if (c === "'" || c === '"') {
      const from = line;
      let value = '';
      for (i++; i < text.length && text[i] !== c; i++) {
        if (text[i] === '\\') value += text[i++];
        if (text[i] === '\n') line++;
        value += text[i];
      }
      i++;
      literal(value, from);
    } else if (c === '`') {
      i++;
      readTemplate();
    } else if (c === '}' && templates.length > 0 && templates.at(-1) === depth) {
      templates.pop();
      i++;
      readTemplate();
    } else if (c === '/' && (!/[\w$)\]'"]/.test(last) || BEFORE_REGEX.has(word))) {
      // A regular expression: up to its closing slash outside a class, then its flags.
      let inClass = false;
      for (i++; i < text.length && (inClass || text[i] !== '/'); i++) {
        if (text[i] === '\\') i++;
        else if (text[i] === '[') inClass = true;
        else if (text[i] === ']') inClass = false;
      }
      for (i++; /[a-z]/.test(text[i] ?? ''); i++);
      emit('/re/');
    } else {
      if (c === '\n') line++;
      if (c === '{') depth++;
      if (c === '}') depth--;
      // A word whole, so that `last` and `word` see it at once.
      const run = /^[\w$]+/.exec(text.slice(i, i + 64))?.[0];
      emit(c === '\n' ? ' ' : (run ?? c));
      i += run?.length ?? 1;
    }
  }
  const code = pieces.join('');
  return { strings, code, lineAt: (offset) => pieceLines[starts.findLastIndex((start) => start <= offset)] ?? line };
}

const DRIVER_NAMES = ['sqlite', 'better-sqlite3', 'mysql', 'mysql2', 'pg', 'postgres'].join('|');
/** A driver or dialect name compared (`client === 'pg'`, `'mysql' !== x`, `case 'sqlite':`). */
const NAME_COMPARED = new RegExp(`[!=]==?\\s*'(${DRIVER_NAMES})'|'(${DRIVER_NAMES})'\\s*[!=]==?|\\bcase\\s+'(${DRIVER_NAMES})'\\s*:`, 'g');
/** SQL one database speaks and another does not, in a string or template literal. */
const DIALECT_SQL: Array<[string, RegExp]> = [
  ['an upsert', /\bON\s+(CONFLICT|DUPLICATE\s+KEY)\b|\bLAST_INSERT_ID\b/i],
  ['a row lock', /\bFOR\s+(UPDATE|SHARE|NO\s+KEY\s+UPDATE|KEY\s+SHARE)\b|\bSKIP\s+LOCKED\b|\bNOWAIT\b/i],
  ['RETURNING', /\bRETURNING\b/i],
  ['a catalogue read', /\bpg_[a-z]|\binformation_schema\b|\bsqlite_master\b|\bPRAGMA\b/i],
];
/** knex calls whose SQL or effect differs by database (a lock SQLite ignores, RETURNING MySQL lacks). */
const DIALECT_CALL = /\.\s*(forUpdate|forShare|forNoKeyUpdate|forKeyShare|skipLocked|noWait|returning)\s*\(/g;

/** Where a file writes dialect code: "line: what". */
function dialectFindings(text: string): string[] {
  const { strings, code, lineAt } = scanned(text);
  const findings: string[] = [];
  for (const { text: literal, line } of strings) {
    for (const [what, pattern] of DIALECT_SQL) if (pattern.test(literal)) findings.push(`${line}: ${what} (${pattern.exec(literal)![0]})`);
  }
  for (const match of code.matchAll(NAME_COMPARED)) findings.push(`${lineAt(match.index)}: a driver name compared (${match[0]})`);
  for (const match of code.matchAll(DIALECT_CALL)) findings.push(`${lineAt(match.index)}: a dialect's knex call (.${match[1]})`);
  return [...new Set(findings)];
}

/** What the check covers: core outside db/, and the CLI (plugins and test support may speak their own SQL). */
const checked = [
  ...sourceFiles(source).filter((file) => !path.relative(source, file).startsWith(`db${path.sep}`)),
  ...sourceFiles(path.join(root, 'packages/cli/src')),
];

describe('unit: dialect code only in packages/core/src/db/ (db/dialect.ts)', () => {
  it('finds no driver name compared and no dialect SQL in core outside db/ or in the CLI', () => {
    const found = checked.flatMap((file) => dialectFindings(readFileSync(file, 'utf8')).map((finding) => `${path.relative(root, file)}:${finding}`));
    expect(found, 'ask dialectOf() (db/connect.ts) and put what differs in db/dialects/').to.deep.equal([]);
  });

  it('would see them (the guard guards): the rate-limit counters as they were, a lock, a catalogue read', () => {
    const counters = `
      // A comment may say ON CONFLICT, RETURNING or client === 'sqlite': comments are not code.
      if (settings.client === 'postgres') return db.raw(POSTGRES_UPSERT, [key, windowEnd]);
      if ('mysql2' !== db.client.config.client) return undefined;
      const MYSQL_UPSERT = \`INSERT INTO tkgate_rate_limits (key_hash, window_end, hits) VALUES (?, ?, 1)
      ON DUPLICATE KEY UPDATE hits = LAST_INSERT_ID(hits + 1)\`;
      const POSTGRES_UPSERT = 'INSERT INTO t (k) VALUES (?) ON CONFLICT (k) DO UPDATE SET n = n + 1 RETURNING n';
      const half = total / 2; const quote = /'/g; if (client === 'pg') return half;
      await trx('runs').where({ id }).forUpdate().skipLocked().first();
      await db.raw(\`SELECT \${column} FROM information_schema.columns WHERE x = 1 FOR UPDATE\`);
      switch (dialect) { case 'sqlite': break; }`;
    const findings = dialectFindings(counters);
    expect(findings.filter((finding) => finding.includes('a driver name compared'))).to.have.length(4);
    for (const what of ['an upsert', 'RETURNING', 'a row lock', 'a catalogue read', '.forUpdate', '.skipLocked']) {
      expect(
        findings.some((finding) => finding.includes(what)),
        what,
      ).to.equal(true);
    }
    expect(
      findings.some((finding) => finding.startsWith('2:')),
      'a comment',
    ).to.equal(false);
  });
});

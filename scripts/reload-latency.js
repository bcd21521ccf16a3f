#!/usr/bin/env node
// Edit-to-live latency of toolkit hot reload, measured from outside like an operator would see it:
// the real tkgate binary on a fresh SQLite file watches a directory of N toolkit files (5 endpoints each);
// one file is saved (an atomic rename, as editors do) with a new endpoint, and its path is polled every
// 5 ms until it answers 200. `--edit add` adds the endpoint beside the others; `--edit rename` renames one
// (the old path goes away: such a change waits twice toolkits.settle). Prints median, p90 and max.
//
//   node scripts/reload-latency.js [--files 1,300] [--trials 15] [--edit add|rename] [--bin packages/cli/dist/main.js] [--verbose]
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { addUser, migrateToLatest, openDatabase } from '@tkgate/core';
import { freePort, startProcess } from './bench/processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '1,300' },
    trials: { type: 'string', default: '15' },
    bin: { type: 'string', default: path.join(root, 'packages/cli/dist/main.js') },
    edit: { type: 'string', default: 'add' },
    verbose: { type: 'boolean', default: false },
  },
});
const USER = { username: 'latency', password: 'latency-password-1' };

/** One toolkit file: a few endpoints with client filters, so compiling it costs what a real file costs. */
function toolkitJson(name, version) {
  const endpoint = (p) => ({
    path: p,
    method: ['GET', 'POST'],
    type: 'internal',
    client_filter: {
      allowed_fields: ['q', 'status'],
      field_rules: { q: { type: 'string', max_length: 64, pattern: '^[a-z ]*$' }, status: { type: 'string', allowed_values: ['open', 'closed'] } },
    },
    pseudo_querys: [{ select: 'core_groups', columns: ['id', 'name'], order_by: 'id', limit: 5 }],
  });
  const versions = values.edit === 'rename' ? [version] : Array.from({ length: version + 1 }, (_, v) => v);
  return JSON.stringify(
    { name, type: 'app', endpoints: [...versions.map((v) => endpoint(`v${v}`)), endpoint('a'), endpoint('b'), endpoint('c'), endpoint('d')] },
    null,
    2,
  );
}

function saveAtomically(dir, file, text) {
  const temporary = path.join(dir, `.${file}.tmp`);
  writeFileSync(temporary, text);
  renameSync(temporary, path.join(dir, file));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function measure(fileCount, trials) {
  const work = mkdtempSync(path.join(tmpdir(), 'tkgate-latency-'));
  const dir = path.join(work, 'toolkits');
  mkdirSync(dir);
  for (let i = 0; i < fileCount; i++) writeFileSync(path.join(dir, `kit-${i}.json`), toolkitJson(`kit-${i}`, 0));
  const filename = path.join(work, 'tkgate.sqlite');
  const db = openDatabase({ client: 'sqlite', filename, url: '' });
  await migrateToLatest(db);
  await addUser(db, { ...USER, power: 100 });
  await db.destroy();
  const port = await freePort();
  const config = path.join(work, 'tkgate.json');
  writeFileSync(
    config,
    JSON.stringify({
      server: { port },
      db: { client: 'sqlite', filename },
      toolkits: { dir, watch: true },
      sessions: { persist: false },
    }),
  );
  const gateway = await startProcess(process.execPath, [values.bin, 'start', '--config', config], {
    cwd: work,
    ready: (line) => line.includes('"listening"'),
    timeoutMs: 60_000,
  });
  try {
    const base = `http://127.0.0.1:${port}/api`;
    const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(USER) });
    const { data } = await login.json();
    const headers = { authorization: `Bearer ${data.token}` };
    const target = Math.floor(fileCount / 2);
    const results = [];
    for (let version = 1; version <= trials; version++) {
      await sleep(700); // the directory is quiet before each edit
      const url = `${base}/tk/app/kit-${target}/v${version}`;
      const started = performance.now();
      saveAtomically(dir, `kit-${target}.json`, toolkitJson(`kit-${target}`, version));
      for (;;) {
        const reply = await fetch(url, { headers });
        await reply.arrayBuffer();
        if (reply.status === 200) break;
        if (performance.now() - started > 10_000) throw new Error(`edit ${version} not live within 10 s`);
        await sleep(5);
      }
      results.push(performance.now() - started);
      if (values.verbose) console.error(`edit ${version}: ${results.at(-1).toFixed(0)} ms`);
    }
    if (values.verbose)
      console.error(
        gateway
          .output()
          .split('\n')
          .filter((line) => line.includes('toolkit'))
          .slice(-60)
          .join('\n'),
      );
    return results;
  } finally {
    await gateway.stop();
  }
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const trials = Number(values.trials);
if (!['add', 'rename'].includes(values.edit)) throw new Error('--edit is add or rename');
console.log(`edit: ${values.edit}, ${trials} edits per directory, ${values.bin}`);
console.log('| files in the directory | median ms | p90 ms | max ms |');
console.log('|---:|---:|---:|---:|');
for (const count of values.files.split(',').map(Number)) {
  const sorted = (await measure(count, trials)).sort((a, b) => a - b);
  console.log(`| ${count} | ${quantile(sorted, 0.5).toFixed(0)} | ${quantile(sorted, 0.9).toFixed(0)} | ${sorted.at(-1).toFixed(0)} |`);
}

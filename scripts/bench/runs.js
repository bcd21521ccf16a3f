// node scripts/bench/runs.js [calls]: what a run costs and how fast its output travels (docs/runs.md); also
// scenario 13 of `npm run bench` (measureRuns).
// 1. The answer of an async exec call (202, the run recorded) against a sync call of the same tiny script, on
//    SQLite, sequential calls in turns (median and p99 of each); and the same on an endpoint whose one place is
//    held, so that no run starts meanwhile (the cost of recording the run alone).
// 2. A line's way from the command to an SSE follower: the command prints its clock (ms) every 20 ms; the
//    follower subtracts it from its own clock at arrival. On the instance running the command, and on a second
//    instance on the same SQLite file (which reads the chunks table).
// 3. What followers cost the database: 10, then 100 SSE followers of one run on the instance that does not run
//    it, the queries that instance sends meanwhile (knex's own `knex:query` debug lines, one per query) over the
//    same window, with no follower as the base (the instance's housekeeping ticks).
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { addUser, migrateToLatest, openDatabase } from '@tkgate/core';
import { startTkgate, login, BENCH_USER } from './tkgate.js';

/** Scenario 13's measurements: { rows: [{ name, n, p50, p99 }], queries: { none, ten, hundred, windowMs } }. */
export async function measureRuns({ calls = 300, followWindowMs = 3000 } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-bench-runs-'));
  const script = (name, body) => {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };
  const tiny = script('tiny.sh', 'echo \'{"ok":true}\'');
  const hold = script('hold.sh', 'sleep 600');
  const clock = script('clock.sh', 'i=0; while [ $i -lt 150 ]; do echo "$(($(date +%s%N)/1000000))"; i=$((i+1)); sleep 0.02; done');
  const long = script('long.sh', 'i=0; while [ $i -lt 600 ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done');
  const filename = path.join(dir, 'tkgate.sqlite');
  const db = openDatabase({ client: 'sqlite', filename, url: '' });
  await migrateToLatest(db);
  await addUser(db, { ...BENCH_USER, power: 100 });
  await db.destroy();
  const toolkits = path.join(dir, 'toolkits');
  mkdirSync(toolkits);
  writeFileSync(
    path.join(toolkits, 'bench.json'),
    JSON.stringify({
      name: 'bench',
      type: 'app',
      endpoints: [
        { path: 'sync', method: 'POST', type: 'exec', command: [tiny], max_concurrency: 16 },
        { path: 'async', method: 'POST', type: 'exec', run: 'async', command: [tiny], max_concurrency: 16, max_queued: 100_000 },
        { path: 'clock', method: 'POST', type: 'exec', run: 'async', command: [clock] },
        { path: 'long', method: 'POST', type: 'exec', run: 'async', command: [long] },
        { path: 'held', method: 'POST', type: 'exec', run: 'async', command: [hold], max_concurrency: 1, max_queued: 100_000 },
      ],
    }),
  );
  const config = path.join(dir, 'tkgate.json');
  writeFileSync(
    config,
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0 },
      db: { client: 'sqlite', filename },
      toolkits: { dir: toolkits, watch: false },
      log: { level: 'warn', access: false },
      runs: { drain_timeout: '1s' },
      metrics: { enabled: false },
    }),
  );
  const [a, b] = [await startTkgate(config), await startTkgate(config)];
  const token = await login(a.base);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  const percentile = (values, p) => [...values].sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
  const timed = async (url) => {
    const started = performance.now();
    const response = await fetch(url, { method: 'POST', headers, body: '{}' });
    await response.arrayBuffer();
    return performance.now() - started;
  };

  const times = { sync: [], async: [], held: [] };
  await timed(`${a.base}/tk/app/bench/held`); // runs for 10 minutes: the next ones wait
  for (let i = 0; i < calls; i++) {
    times.sync.push(await timed(`${a.base}/tk/app/bench/sync`));
    times.async.push(await timed(`${a.base}/tk/app/bench/async`));
    times.held.push(await timed(`${a.base}/tk/app/bench/held`));
  }

  /** Follows one clock run from `base`: each line's delay from the command's print to its arrival here. */
  async function lineDelays(base) {
    const started = await fetch(`${a.base}/tk/app/bench/clock`, { method: 'POST', headers, body: '{}' });
    const { run_id: id } = (await started.json()).data;
    const response = await fetch(`${base}/runs/${id}/output`, { headers: { ...headers, accept: 'text/event-stream' } });
    const delays = [];
    const parser = createParser({
      onEvent: (event) => {
        if (event.event !== 'stdout') return;
        const now = Date.now();
        for (const line of event.data.split('\n')) if (line) delays.push(now - Number(line));
      },
    });
    const decoder = new TextDecoder();
    for await (const bytes of response.body) parser.feed(decoder.decode(bytes, { stream: true }));
    return delays;
  }
  const local = await lineDelays(a.base);
  const remote = await lineDelays(b.base);

  /** One SSE follower of a run on `base`, once its first event came; it reads on until aborted. */
  async function follow(base, id, signal) {
    const response = await fetch(`${base}/runs/${id}/output`, { headers: { ...headers, accept: 'text/event-stream' }, signal });
    const reader = response.body.getReader();
    await reader.read();
    void (async () => {
      try {
        while (!(await reader.read()).done);
      } catch {
        // Aborted.
      }
    })();
  }
  /** The queries instance `c` sends over the window while `n` followers of one running run read its output there. */
  const queried = () => (c.output().match(/knex:query/g) ?? []).length;
  async function followerQueries(n) {
    const started = await fetch(`${a.base}/tk/app/bench/long`, { method: 'POST', headers, body: '{}' });
    const { run_id: id } = (await started.json()).data;
    const controller = new AbortController();
    await follow(a.base, id, controller.signal); // the run has printed: it runs
    await Promise.all(Array.from({ length: n }, () => follow(c.base, id, controller.signal)));
    const before = queried();
    await new Promise((resolve) => setTimeout(resolve, followWindowMs));
    const count = queried() - before;
    controller.abort();
    await fetch(`${a.base}/runs/${id}/cancel`, { method: 'POST', headers });
    return count;
  }
  const c = await startTkgate(config, [], { DEBUG: 'knex:query' });
  const queries = { windowMs: followWindowMs, none: await followerQueries(0), ten: await followerQueries(10), hundred: await followerQueries(100) };
  await Promise.all([a.stop(), b.stop(), c.stop()]);

  const row = (name, values) => ({ name, n: values.length, p50: percentile(values, 50), p99: percentile(values, 99) });
  return {
    rows: [
      row('sync exec call (200, the command run)', times.sync),
      row('async exec call (202, the run recorded; runs start meanwhile)', times.async),
      row('async exec call whose queue is full (202: the record alone)', times.held),
      row('a line to an SSE follower, same instance', local),
      row('a line to an SSE follower, other instance', remote),
    ],
    queries,
  };
}

/** The DB queries of 0, 10 and 100 followers, as a line of the report. */
export const queriesLine = ({ windowMs, none, ten, hundred }) =>
  `DB queries of the instance following a run in ${windowMs / 1000} s: ${none} with no follower (its own ticks), ${ten} with 10 SSE followers, ${hundred} with 100`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { rows, queries } = await measureRuns({ calls: Number(process.argv[2] ?? 300) });
  process.stdout.write(
    [
      '| what (ms) | n | median | p99 |',
      '|---|---|---|---|',
      ...rows.map((r) => `| ${r.name} | ${r.n} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} |`),
      '',
      queriesLine(queries),
    ].join('\n') + '\n',
  );
}

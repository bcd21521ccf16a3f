// node scripts/bench/runs-scale.js [runs] [dialects]: runs at scale (docs/runs.md, "Claims and wake-ups"), three
// tkgate instances on one database, for each of SQLite, MariaDB and PostgreSQL (default runs 1000, dialects
// sqlite,mysql,postgres; MariaDB at 127.0.0.1:3306 as root, PostgreSQL at 127.0.0.1:5432 as postgres, as the tests).
// 1. queued->started: runs asked one at a time (10 ms after the last one's 202, round robin over the instances) of an endpoint
//    with places to spare; each run's started_at - queued_at as the database recorded them (one clock: one machine).
// 2. drained per second: a burst of `runs` calls (max_concurrency 20, a command that ends at once), the runs over
//    the time from the first queued to the last ended.
// 3. DB queries per run: every query the three instances sent during the burst (knex's `knex:query` debug lines),
//    the calls' own included, divided by the runs.
// 4. a line to a follower on another instance: the command prints its clock (ms) every 20 ms; a follower on an
//    instance that does not run it subtracts it from its own clock at arrival.
// 5. a cancel's reach: a run sleeping on one instance is cancelled through another; the run's ended_at (written by
//    the instance running it, once its process is gone) less its cancel_requested_at (written by the one asked).
// With `runs.wakeups` at its default (auto: LISTEN/NOTIFY on PostgreSQL, polling elsewhere); BENCH_WAKEUPS=redis
// measures MariaDB and SQLite with Redis (127.0.0.1:6379) instead.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { addUser, migrateToLatest, openDatabase } from '@tkgate/core';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { startTkgate, login, writeBenchConfig, BENCH_USER } from './tkgate.js';

const percentile = (values, p) => [...values].sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fresh database of the dialect: its `db` settings and how to drop it (`tag` tells two of one bench apart). */
export async function freshDatabase(dialect, dir, tag = '') {
  const name = `tkgate_bench_${process.pid}${tag}`;
  if (dialect === 'sqlite') return { db: { client: 'sqlite', filename: path.join(dir, 'tkgate.sqlite') }, drop: async () => undefined };
  if (dialect === 'mysql') {
    const admin = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    return {
      db: { client: 'mysql', url: `mysql://root@127.0.0.1:3306/${name}` },
      drop: async () => {
        const again = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
        await again.query(`DROP DATABASE IF EXISTS ${name}`);
        await again.end();
      },
    };
  }
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    db: { client: 'postgres', url: `postgres://postgres@127.0.0.1:5432/${name}` },
    drop: async () => {
      const again = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
      await again.connect();
      await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await again.end();
    },
  };
}

/** The four measurements on one dialect. */
export async function measureRunsScale(dialect, { runs = 1000, wakeups, paced: pacedCalls = 300, cancels = 30 } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), `tkgate-bench-runs-scale-${dialect}-`));
  const script = (name, body) => {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };
  const quick = script('quick.sh', 'exit 0');
  const sleeper = script('sleeper.sh', 'exec sleep 60');
  const clock = script('clock.sh', 'i=0; while [ $i -lt 150 ]; do echo "$(($(date +%s%N)/1000000))"; i=$((i+1)); sleep 0.02; done');
  const { db: dbSettings, drop } = await freshDatabase(dialect, dir);
  const db = openDatabase({ url: '', filename: '', ...dbSettings });
  await migrateToLatest(db);
  await addUser(db, { ...BENCH_USER, power: 100 });
  const toolkits = path.join(dir, 'toolkits');
  mkdirSync(toolkits);
  const exec = { method: 'POST', type: 'exec', run: 'async', context: 'none' };
  writeFileSync(
    path.join(toolkits, 'bench.json'),
    JSON.stringify({
      name: 'bench',
      type: 'app',
      endpoints: [
        { ...exec, path: 'paced', command: [quick], max_concurrency: 50, max_queued: 10_000 },
        { ...exec, path: 'burst', command: [quick], max_concurrency: 20, max_queued: runs },
        { ...exec, path: 'clock', command: [clock] },
        { ...exec, path: 'sleeper', command: [sleeper], max_concurrency: 5 },
      ],
    }),
  );
  const config = writeBenchConfig(dir, {
    db: dbSettings,
    toolkits,
    runs: { drain_timeout: '1s', ...(wakeups && { wakeups }) },
    ...(wakeups === 'redis' && { redis: { url: 'redis://127.0.0.1:6379/0' } }),
    plugin_options: { '@tkgate/plugin-exec': { max_processes: 64 } },
  });
  const gateways = [];
  for (let i = 0; i < 3; i++) gateways.push(await startTkgate(config, [], { DEBUG: 'knex:query' }));
  try {
    const token = await login(gateways[0].base);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const askTimes = [];
    const ask = async (gateway, endpoint) => {
      const asked = performance.now();
      const response = await fetch(`${gateway.base}/tk/app/bench/${endpoint}`, { method: 'POST', headers, body: '{}' });
      const body = await response.json();
      if (response.status !== 202) throw new Error(`${endpoint}: ${response.status} ${JSON.stringify(body)}`);
      if (endpoint === 'paced') askTimes.push(performance.now() - asked);
      return body.data.run_id;
    };
    const endedAll = async (endpoint, timeoutMs = 600_000) => {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        const left = await db('runs').where({ endpoint }).whereIn('status', ['queued', 'running']).count({ n: '*' }).first();
        if (Number(left.n) === 0) return;
        await sleep(100);
      }
      throw new Error(`${endpoint}: runs still waiting after ${timeoutMs} ms`);
    };

    // 1. queued->started, one call at a time (each after the last one's 202 and a pause): the latency of a run
    //    asked for on a system that keeps up, not of a backlog.
    const paced = Math.min(pacedCalls, runs);
    for (let i = 0; i < paced; i++) {
      await ask(gateways[i % 3], 'paced');
      await sleep(10);
    }
    await endedAll('paced');
    const pacedRows = await db('runs').where({ endpoint: 'paced' }).select('queued_at', 'started_at');
    const startDelays = pacedRows.map((row) => Number(row.started_at) - Number(row.queued_at));

    // 2 and 3. The burst: drained per second, queries per run.
    const queries = () => gateways.reduce((sum, gateway) => sum + (gateway.output().match(/knex:query/g) ?? []).length, 0);
    const before = queries();
    const inFlight = 30;
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < runs) {
          const i = next++;
          await ask(gateways[i % 3], 'burst');
        }
      }),
    );
    await endedAll('burst');
    const span = await db('runs').where({ endpoint: 'burst' }).min({ first: 'queued_at' }).max({ last: 'ended_at' }).first();
    const drainedPerSecond = runs / ((Number(span.last) - Number(span.first)) / 1000);
    await sleep(200);
    const queriesPerRun = (queries() - before) / runs;

    // 4. A line to a follower on another instance.
    const id = await ask(gateways[0], 'clock');
    let instance;
    for (let i = 0; i < 200 && !instance; i++) {
      instance = (await db('runs').where({ id }).first('instance'))?.instance;
      if (!instance) await sleep(10);
    }
    const runningPid = Number(String(instance).split(':')[1]);
    const other = gateways.find((gateway) => gateway.pid !== runningPid);
    const response = await fetch(`${other.base}/runs/${id}/output`, { headers: { ...headers, accept: 'text/event-stream' } });
    const lineDelays = [];
    const parser = createParser({
      onEvent: (event) => {
        if (event.event !== 'stdout') return;
        const now = Date.now();
        for (const line of event.data.split('\n')) if (line) lineDelays.push(now - Number(line));
      },
    });
    const decoder = new TextDecoder();
    for await (const bytes of response.body) parser.feed(decoder.decode(bytes, { stream: true }));

    // 5. A cancel's reach, one run at a time: running on one instance, cancelled through another.
    const cancelDelays = [];
    for (let i = 0; i < cancels; i++) {
      const sleeping = await ask(gateways[i % 3], 'sleeper');
      let running;
      for (let waited = 0; waited < 30_000 && !running; waited += 10) {
        running = await db('runs').where({ id: sleeping, status: 'running' }).first('instance');
        if (!running) await sleep(10);
      }
      if (!running) throw new Error(`sleeper ${sleeping} did not start`);
      const pid = Number(String(running.instance).split(':')[1]);
      const asked = gateways.find((gateway) => gateway.pid !== pid);
      const cancelled = await fetch(`${asked.base}/runs/${sleeping}/cancel`, { method: 'POST', headers, body: '{}' });
      if (cancelled.status !== 202) throw new Error(`cancel: ${cancelled.status} ${await cancelled.text()}`);
      await endedAll('sleeper', 60_000);
      const ended = await db('runs').where({ id: sleeping }).first('cancel_requested_at', 'ended_at', 'status');
      if (ended.status !== 'cancelled') throw new Error(`sleeper ${sleeping} ended ${ended.status}`);
      cancelDelays.push(Number(ended.ended_at) - Number(ended.cancel_requested_at));
    }

    const row = (name, values) => ({ name, n: values.length, p50: percentile(values, 50), p99: percentile(values, 99) });
    return {
      dialect,
      wakeups: wakeups ?? (dialect === 'postgres' ? 'notify (auto)' : 'poll (auto)'),
      rows: [
        row('the 202 of a paced call (ms)', askTimes),
        row('queued->started (ms)', startDelays),
        row('a line to a follower on another instance (ms)', lineDelays),
        ...(cancelDelays.length > 0 ? [row('a cancel reaching the running instance (ms)', cancelDelays)] : []),
      ],
      drainedPerSecond,
      queriesPerRun,
    };
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await db.destroy();
    await drop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const runs = Number(process.argv[2] ?? 1000);
  const dialects = (process.argv[3] ?? 'sqlite,mysql,postgres').split(',');
  const lines = ['| database (wake-ups) | what | n | median | p99 |', '|---|---|---|---|---|'];
  const totals = [];
  for (const dialect of dialects) {
    const wakeups = dialect !== 'postgres' ? process.env.BENCH_WAKEUPS : process.env.BENCH_POSTGRES_WAKEUPS;
    const result = await measureRunsScale(dialect, { runs, wakeups });
    for (const r of result.rows) lines.push(`| ${dialect} (${result.wakeups}) | ${r.name} | ${r.n} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} |`);
    totals.push(
      `${dialect} (${result.wakeups}): ${runs} runs drained at ${result.drainedPerSecond.toFixed(0)}/s, ${result.queriesPerRun.toFixed(1)} DB queries per run`,
    );
    process.stderr.write(`${dialect} done\n`);
  }
  process.stdout.write([...lines, '', ...totals].join('\n') + '\n');
}

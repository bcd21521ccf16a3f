// Scenario 13's async call under load (measured as scenarios 1, 3, 12 and 15 are):
// `POST` to a `run: async` exec endpoint under 50 connections, gateway CPU per request and p99, beside the sync
// exec call of the same tiny script and scenario 3's context POST, all on one gateway of its own (its own SQLite
// file, so no other gateway claims its runs), interleaved rounds.
//
// Each 202 records a run, and a run that starts costs a spawn, a claim and an end, more than the 202 itself: runs
// starting while the 202s are measured would make the figure the 202s' and some of their runs', whichever started
// within the window. So the target row's endpoint has one place (`max_concurrency: 1`), held by a run that sleeps
// for the whole bench: its 202s record runs that wait, the cost of the 202 alone. Its queue (`max_queued`, 503
// `busy` when full) is emptied after the warm-up and after each window (the waiting rows deleted from the
// database by the bench), so every window starts from an empty queue and cannot fill it. A second row lets the
// runs start (`max_concurrency: 8`): the 202 with runs starting on the same instance meanwhile; after each window
// the bench waits until its runs have ended, so none runs into the next target's window.
// Failed answers are counted (wrk's non-2xx and socket errors); a row with any has no CPU or p99 figure.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openDatabase } from '@tkgate/core';
import { sleep } from './processes.js';
import { login, prepareGateway, startTkgate } from './tkgate.js';

/** How long the runs of one window may take to end before the bench gives up (a loaded 2-core machine). */
const DRAIN_TIMEOUT_MS = 300_000;

/** The runs toolkit: the tiny script sync, async with places, and async behind a held place. */
function runsToolkit(tinyScript, holdScript) {
  const exec = { method: 'POST', type: 'exec', command: [tinyScript] };
  return {
    name: 'runs',
    type: 'app',
    endpoints: [
      { ...exec, path: 'sync', max_concurrency: 16, max_queue: 256 },
      { ...exec, path: 'async', run: 'async', max_concurrency: 8, max_queued: 100_000 },
      { ...exec, path: 'held', run: 'async', command: [holdScript], max_concurrency: 1, max_queued: 100_000 },
    ],
  };
}

/**
 * The entries of the scenario (the held 202 first) on a gateway of its own; `stop()` ends it.
 * `row(name, gateway, load)` is run.js's tkgate row; `startingRuns: false` leaves out the row whose runs start
 * (the slowest: its runs are waited for after each window), as the smoke run does.
 */
export async function asyncCallEntries({ dir, upstreamPort, tinyScript, row, track, startingRuns = true }) {
  const own = path.join(dir, 'runs-load');
  mkdirSync(own, { recursive: true });
  const holdScript = path.join(own, 'hold.sh');
  writeFileSync(holdScript, '#!/bin/sh\nexec sleep 3600\n', { mode: 0o755 });
  const { config, filename } = await prepareGateway(own, { upstreamPort, tinyScript });
  writeFileSync(path.join(own, 'toolkits', 'runs.json'), JSON.stringify(runsToolkit(tinyScript, holdScript), null, 2));
  const settings = JSON.parse(readFileSync(config, 'utf8'));
  // A stop kills the held run at once rather than after 30 s.
  settings.runs = { drain_timeout: '1s' };
  writeFileSync(config, JSON.stringify(settings, null, 2));
  const gateway = track(await startTkgate(config));
  const db = openDatabase({ client: 'sqlite', filename, url: '' });
  const runsOf = (endpoint, statuses) => db('runs').where({ toolkit: 'runs', endpoint }).whereIn('status', statuses);
  const count = async (endpoint, statuses) => Number((await runsOf(endpoint, statuses).count({ n: '*' }).first())?.n ?? 0);

  const auth = { authorization: `Bearer ${await login(gateway.base)}` };
  const post = (url, body = '{}') => ({ url, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
  const held = await fetch(`${gateway.base}/tk/app/runs/held`, { method: 'POST', headers: post('').headers, body: '{}' });
  if (held.status !== 202) throw new Error(`the held run was not accepted: ${held.status} ${await held.text()}`);
  for (let waited = 0; (await count('held', ['running'])) === 0; waited += 100) {
    if (waited > 60_000) throw new Error('the held run did not start within 60 s');
    await sleep(100);
  }

  /** Deletes the held endpoint's waiting runs: the next window's queue starts empty. */
  const emptyHeldQueue = async () => void (await runsOf('held', ['queued']).delete());
  /** Waits until every run of the async endpoint has ended. */
  const drainRuns = async () => {
    for (let waited = 0; (await count('async', ['queued', 'running'])) > 0; waited += 100) {
      if (waited > DRAIN_TIMEOUT_MS) throw new Error(`the async endpoint's runs did not end within ${DRAIN_TIMEOUT_MS / 1000} s`);
      await sleep(100);
    }
  };
  return {
    entries: [
      { ...row('async exec (202), the run waits: the record alone', gateway, post('/tk/app/runs/held')), settle: emptyHeldQueue },
      startingRuns && { ...row('async exec (202), runs start meanwhile', gateway, post('/tk/app/runs/async')), settle: drainRuns },
      row('sync exec (200, the script run)', gateway, post('/tk/app/runs/sync')),
      row('context POST (http endpoint, scenario 3)', gateway, post('/tk/app/bench/json', '{"q":"disk"}')),
    ],
    stop: async () => {
      await db.destroy();
      await gateway.stop();
    },
  };
}

/**
 * A row with failed answers in any window has no figure (its CPU and p99 would be the failures'), nor has a ratio
 * to it: the scenario's result ({ rows, goals }) is changed in place.
 */
export function withoutFailedFigures({ rows, goals }) {
  const failed = rows.filter((row) => row.non2xx + row.errors > 0);
  for (const row of failed) {
    row.cpu_us_per_req = null;
    row.p99 = null;
  }
  if (failed.length > 0) for (const goal of goals) goal.ratio = null;
}

// node scripts/bench/fleet.js [nodes] [parallel] [dialects] (after `npm run build`): one fleet run (docs/fleet.md)
// against Ansible's ad-hoc command on the same inventory, in the same run, and the node table of a 10,000-node run.
// Also scenario 19 of `npm run bench` (scripts/bench/run.js).
// 1. 200 node names (default) spread over 10 real sshd servers on 127.0.0.2-11 (test/support/sshd-nodes.ts, from
//    the build), `uptime` on each with parallel 50: the time from the 202 to the run's end, the gateway's CPU
//    (its /proc utime + stime over the run), its peak RSS over its idle RSS divided by parallel, and the RSS of an
//    OpenSSH client of a running node; then `ansible all -f 50 -m command -a uptime` (Debian's ansible-core) on
//    the same nodes and keys (an INI inventory, the same pinned host keys), its wall time and CPU (its children's).
//    A node that did not succeed (on either side) fails the bench: a figure over unreachable nodes is no figure.
// 2. A recorded run of 10,000 nodes (rows written straight into the database, on each of `dialects`, default
//    sqlite,postgres): GET runs/{id}/nodes pages (limit 100, all and by status, following keyset cursors) and
//    GET runs/{id} (the first 1,000 nodes and the counts), median and p99.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { addUser, migrateToLatest, openDatabase } from '@tkgate/core';
import { freshDatabase } from './runs-scale.js';
import { startTkgate, login, writeBenchConfig, BENCH_USER } from './tkgate.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const { startSshdNodes } = await import(path.join(root, 'build/test/support/sshd-nodes.js'));

const TICKS = Number((await run('getconf', ['CLK_TCK'])).stdout.trim()) || 100;
/** utime + stime of a process (and, with children, of its waited-for children), in ms. */
function cpuMs(pid, children = false) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0);
  return (ticks * 1000) / TICKS;
}
/** A process's RSS in KiB; 0 once it has ended (an ssh client of a node that finished meanwhile). */
function rssKiB(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}
const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];

/** 1. One fleet run beside Ansible on the same nodes; throws when a node did not succeed on either side. */
export async function measureFleetRun({ nodes: count = 200, parallel = 50, servers = 10 } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-bench-fleet-'));
  // Logins skip the login user's ~/.bashrc (sshd-nodes.ts, quietLogins): root's here runs pyenv's init, seconds a login.
  const fleet = await startSshdNodes(servers, { quietLogins: true });
  try {
    const nodes = Array.from({ length: count }, (_, i) => {
      const sshd = fleet.nodes[i % servers];
      return { name: `node-${i}`, host: sshd.address, port: sshd.port, user: fleet.user, host_key: sshd.firstHostKey, labels: { role: 'bench' } };
    });
    const inventory = path.join(dir, 'nodes.json');
    writeFileSync(inventory, JSON.stringify(nodes));
    const filename = path.join(dir, 'tkgate.sqlite');
    const db = openDatabase({ client: 'sqlite', filename, url: '' });
    await migrateToLatest(db);
    await addUser(db, { ...BENCH_USER, power: 100 });
    await db.destroy();
    const toolkits = path.join(dir, 'toolkits');
    mkdirSync(toolkits);
    const key = path.join(fleet.dir, 'user_ed25519');
    writeFileSync(
      path.join(toolkits, 'bench.json'),
      JSON.stringify({
        name: 'bench',
        type: 'app',
        endpoints: [
          {
            path: 'uptime',
            method: 'POST',
            type: 'ssh',
            nodes: { match: { role: 'bench' }, max: 100_000 },
            command: ['uptime'],
            context: 'none',
            parallel,
            keep_going: true,
            ssh: { key: { secret: `file:${key}` } },
          },
        ],
      }),
    );
    const config = writeBenchConfig(dir, { db: { client: 'sqlite', filename }, toolkits, fleet: { inventory: [{ file: inventory }] } });

    const gateway = await startTkgate(config);
    try {
      const token = await login(gateway.base);
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const get = async (url) => (await fetch(url, { headers })).json();

      // 1. The fleet run.
      const idleRss = rssKiB(gateway.pid);
      const cpuBefore = cpuMs(gateway.pid);
      const started = performance.now();
      const answer = await (await fetch(`${gateway.base}/tk/app/bench/uptime`, { method: 'POST', headers, body: '{}' })).json();
      const id = answer.data.run_id;
      let peakRss = idleRss;
      let sshRss = [];
      let ran;
      for (;;) {
        peakRss = Math.max(peakRss, rssKiB(gateway.pid));
        const ssh = (await run('pgrep', ['-P', String(gateway.pid), '-x', 'ssh']).catch(() => ({ stdout: '' }))).stdout.trim().split('\n').filter(Boolean);
        if (ssh.length > 0 && sshRss.length < 20)
          sshRss.push(
            ...ssh
              .slice(0, 5)
              .map((pid) => rssKiB(Number(pid)))
              .filter((kib) => kib > 0),
          );
        ran = (await get(`${gateway.base}/runs/${id}`)).data;
        if (!['queued', 'running'].includes(ran.status)) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const tkgateMs = performance.now() - started;
      const tkgateCpuMs = cpuMs(gateway.pid) - cpuBefore;
      if (ran.node_counts.succeeded !== count) {
        const failed = (await get(`${gateway.base}/runs/${id}/nodes?status=failed&limit=20`)).data.nodes;
        throw new Error(
          `the fleet run did not succeed on every node: ${JSON.stringify(ran.node_counts)}; ` +
            `failed (first 20): ${failed.map((node) => `${node.name} ${node.reason ?? node.exit_code}`).join(', ')}`,
        );
      }

      // The same nodes for Ansible: an INI inventory with the same key and the same pinned host keys.
      const knownHosts = path.join(dir, 'known_hosts');
      writeFileSync(knownHosts, fleet.nodes.map((sshd) => `[${sshd.address}]:${sshd.port} ${sshd.firstHostKey}`).join('\n') + '\n');
      const ini = path.join(dir, 'hosts.ini');
      writeFileSync(
        ini,
        ['[all]', ...nodes.map((node) => `${node.name} ansible_host=${node.host} ansible_port=${node.port} ansible_user=${node.user}`)].join('\n') + '\n',
      );
      const env = {
        ...process.env,
        ANSIBLE_HOST_KEY_CHECKING: 'True',
        ANSIBLE_PRIVATE_KEY_FILE: key,
        ANSIBLE_SSH_ARGS: `-o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=yes -o ControlMaster=no`,
        ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3',
        ANSIBLE_LOCAL_TEMP: path.join(dir, 'ansible-local'),
        ANSIBLE_REMOTE_TEMP: path.join(dir, 'ansible-remote'),
      };
      const ansibleStarted = performance.now();
      const ansibleCpuBefore = cpuMs(process.pid, true);
      const ansible = await run('ansible', ['all', '-i', ini, '-f', String(parallel), '-m', 'command', '-a', 'uptime'], {
        env,
        maxBuffer: 64 * 1024 * 1024,
      }).catch((err) => err);
      const ansibleMs = performance.now() - ansibleStarted;
      const ansibleCpuMs = cpuMs(process.pid, true) - ansibleCpuBefore;
      const ansibleOk = (String(ansible.stdout).match(/\| CHANGED \|/g) ?? []).length;
      if (ansibleOk !== count) {
        const bad = String(ansible.stdout)
          .split('\n')
          .filter((line) => / \| (UNREACHABLE|FAILED)/.test(line))
          .slice(0, 5);
        throw new Error(
          `ansible succeeded on ${ansibleOk} of ${count} nodes: ${bad.join(' / ')}${ansible.stderr ? ` ${String(ansible.stderr).slice(-500)}` : ''}`,
        );
      }

      return {
        nodes: count,
        parallel,
        servers,
        tkgate: { ms: Math.round(tkgateMs), cpuMs: Math.round(tkgateCpuMs), status: ran.status, counts: ran.node_counts },
        perRunningNodeKiB: { gateway: Math.round((peakRss - idleRss) / parallel), sshClient: sshRss.length ? Math.round(percentile(sshRss, 50)) : null },
        ansible: { ms: Math.round(ansibleMs), cpuMs: Math.round(ansibleCpuMs), ok: ansibleOk },
      };
    } finally {
      await gateway.stop();
    }
  } finally {
    await fleet.stop();
  }
}

const NODE_STATUSES_RECORDED = ['succeeded', 'succeeded', 'succeeded', 'failed'];

/**
 * 2. A 10,000-node run's node table on one database: the run and its nodes written as a run records them, then
 * pages read through HTTP as the console reads them (all nodes, and failed ones, limit 100, each cursor followed).
 */
export async function measureNodeTable(dialect, { nodes: count = 10_000, rounds = 3 } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), `tkgate-bench-node-table-${dialect}-`));
  const { db: dbSettings, drop } = await freshDatabase(dialect, dir, '_nodes');
  try {
    const db = openDatabase({ url: '', ...dbSettings });
    const id = 'f'.repeat(32);
    try {
      await migrateToLatest(db);
      await addUser(db, { ...BENCH_USER, power: 100 });
      const now = Date.now();
      await db('runs').insert({
        id,
        toolkit: 'bench',
        endpoint: 'uptime',
        method: 'POST',
        queue: 'bench',
        status: 'failed',
        user_id: 1,
        username: BENCH_USER.username,
        actor: 'session',
        view_power: 0,
        cancel_power: 0,
        queued_at: now,
        started_at: now,
        ended_at: now,
        reason: 'nodes_failed',
        node_count: count,
        replay: JSON.stringify({ kind: 'app', path: 'uptime', payload: {} }),
      });
      for (let at = 0; at < count; at += 500) {
        await db('run_nodes').insert(
          Array.from({ length: Math.min(500, count - at) }, (_, i) => ({
            run_id: id,
            name: `node-${String(at + i).padStart(5, '0')}`,
            position: at + i,
            status: NODE_STATUSES_RECORDED[(at + i) % 4],
            exit_code: (at + i) % 4 === 3 ? 1 : 0,
            started_at: now,
            ended_at: now,
            output_bytes: 60,
            output_truncated: false,
          })),
        );
      }
    } finally {
      await db.destroy();
    }
    const toolkits = path.join(dir, 'toolkits');
    mkdirSync(toolkits);
    const config = writeBenchConfig(dir, { db: dbSettings, toolkits });

    const gateway = await startTkgate(config);
    try {
      const headers = { authorization: `Bearer ${await login(gateway.base)}` };
      const timedGet = async (url) => {
        const t = performance.now();
        const response = await fetch(url, { headers });
        const body = await response.json();
        if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${JSON.stringify(body)}`);
        return [performance.now() - t, body.data];
      };
      const first = (await timedGet(`${gateway.base}/runs/${id}/nodes?limit=100`))[0];
      const pages = { all: [], failed: [] };
      for (let round = 0; round < rounds; round++) {
        for (const [which, filter] of [
          ['all', ''],
          ['failed', '&status=failed'],
        ]) {
          let cursor = null;
          let seen = 0;
          do {
            const [ms, data] = await timedGet(`${gateway.base}/runs/${id}/nodes?limit=100${filter}${cursor ? `&cursor=${cursor}` : ''}`);
            pages[which].push(ms);
            seen += data.nodes.length;
            cursor = data.next_cursor;
          } while (cursor);
          const expected = which === 'all' ? count : count / 4;
          if (seen !== expected) throw new Error(`${dialect}: paging ${which} nodes saw ${seen} of ${expected}`);
        }
      }
      const runAnswers = [];
      for (let i = 0; i < 30; i++) runAnswers.push((await timedGet(`${gateway.base}/runs/${id}`))[0]);
      const figure = (values) => ({ p50: +percentile(values, 50).toFixed(1), p99: +percentile(values, 99).toFixed(1), n: values.length });
      return { dialect, nodes: count, firstPageMs: +first.toFixed(1), page: figure(pages.all), failedPage: figure(pages.failed), run: figure(runAnswers) };
    } finally {
      await gateway.stop();
    }
  } finally {
    await drop();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const [nodes, parallel] = process.argv.slice(2, 4).map(Number);
  const dialects = (process.argv[4] ?? 'sqlite,postgres').split(',');
  if (nodes !== 0) console.log(JSON.stringify(await measureFleetRun({ ...(nodes ? { nodes } : {}), ...(parallel ? { parallel } : {}) }), null, 2));
  for (const dialect of dialects) console.log(JSON.stringify(await measureNodeTable(dialect)));
}

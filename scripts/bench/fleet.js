// node scripts/bench/fleet.js [nodes] [parallel] (after `npm run build`): one fleet run (docs/fleet.md) against
// Ansible's ad-hoc command on the same inventory, in the same run, and the node table of a 10,000-node run.
// 1. 200 node names (default) spread over 10 real sshd servers on 127.0.0.2-11 (test/support/sshd-nodes.ts, from
//    the build), `uptime` on each with parallel 50: the time from the 202 to the run's end, the gateway's CPU
//    (its /proc utime + stime over the run), its peak RSS over its idle RSS divided by parallel, and the RSS of an
//    OpenSSH client of a running node; then `ansible all -f 50 -m command -a uptime` (Debian's ansible-core) on
//    the same nodes and keys (an INI inventory, the same pinned host keys), its wall time and CPU (its children's).
// 2. A recorded run of 10,000 nodes (rows written straight into SQLite): GET runs/{id}/nodes pages (limit 100,
//    by status, keyset cursors) and GET runs/{id} (the first 1,000 nodes and the counts), median and p99.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { addUser, migrateToLatest, openDatabase } from '@tkgate/core';
import { startTkgate, login, BENCH_USER } from './tkgate.js';

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
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];

export async function measureFleet({ nodes: count = 200, parallel = 50, servers = 10, bigRun = 10_000 } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tkgate-bench-fleet-'));
  const fleet = await startSshdNodes(servers);
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
    const config = path.join(dir, 'tkgate.json');
    writeFileSync(
      config,
      JSON.stringify({
        server: { host: '127.0.0.1', port: 0 },
        db: { client: 'sqlite', filename },
        toolkits: { dir: toolkits, watch: false },
        fleet: { inventory: [{ file: inventory }] },
        log: { level: 'warn', access: false },
        metrics: { enabled: false },
      }),
    );
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

      // 2. A 10,000-node run's node table: rows recorded as a run records them, then pages read through HTTP.
      const big = 'f'.repeat(32);
      const direct = openDatabase({ client: 'sqlite', filename, url: '' });
      const now = Date.now();
      await direct('runs').insert({ ...(await direct('runs').where({ id }).first()), id: big, node_count: bigRun, queued_at: now });
      const statuses = ['succeeded', 'succeeded', 'succeeded', 'failed'];
      for (let at = 0; at < bigRun; at += 500) {
        await direct('run_nodes').insert(
          Array.from({ length: Math.min(500, bigRun - at) }, (_, i) => ({
            run_id: big,
            name: `node-${String(at + i).padStart(5, '0')}`,
            position: at + i,
            status: statuses[(at + i) % 4],
            exit_code: 0,
            started_at: now,
            ended_at: now,
            output_bytes: 60,
            output_truncated: false,
          })),
        );
      }
      await direct.destroy();
      const timedGet = async (url) => {
        const t = performance.now();
        const body = await get(url);
        return [performance.now() - t, body];
      };
      const pages = [];
      let cursor = null;
      for (let i = 0; i < 60; i++) {
        const [ms, body] = await timedGet(`${gateway.base}/runs/${big}/nodes?status=failed&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        pages.push(ms);
        cursor = body.data.next_cursor;
      }
      const runAnswers = [];
      for (let i = 0; i < 30; i++) runAnswers.push((await timedGet(`${gateway.base}/runs/${big}`))[0]);

      return {
        nodes: count,
        parallel,
        servers,
        tkgate: { ms: Math.round(tkgateMs), cpuMs: Math.round(tkgateCpuMs), status: ran.status, counts: ran.node_counts },
        perRunningNodeKiB: { gateway: Math.round((peakRss - idleRss) / parallel), sshClient: sshRss.length ? Math.round(percentile(sshRss, 50)) : null },
        ansible: { ms: Math.round(ansibleMs), cpuMs: Math.round(ansibleCpuMs), ok: ansibleOk },
        nodeTable: {
          nodes: bigRun,
          pageP50: +percentile(pages, 50).toFixed(1),
          pageP99: +percentile(pages, 99).toFixed(1),
          runP50: +percentile(runAnswers, 50).toFixed(1),
          runP99: +percentile(runAnswers, 99).toFixed(1),
        },
      };
    } finally {
      await gateway.stop();
    }
  } finally {
    await fleet.stop();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const [nodes, parallel] = process.argv.slice(2).map(Number);
  console.log(JSON.stringify(await measureFleet({ ...(nodes ? { nodes } : {}), ...(parallel ? { parallel } : {}) }), null, 2));
}

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { eventually } from './ops.js';
import { tempDir } from './paths.js';

/**
 * A MariaDB server of the test's own (own datadir, own port) for fault tests: stopping, pausing or
 * killing it never touches the shared server.
 */
export interface PrivateMariadb {
  readonly url: string;
  /** SIGSTOP; resolves once the kernel shows the server stopped (it takes effect at its next scheduling). */
  pause(): Promise<void>;
  resume(): void;
  /** How many client connections the server has, besides the one asking. */
  clientConnections(): Promise<number>;
  kill(): Promise<void>;
}

/** A port nothing listens on right now (the test then listens there, or counts on nobody doing so). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export async function startPrivateMariadb(): Promise<PrivateMariadb> {
  const dir = tempDir('tkgate-mariadb-');
  const datadir = path.join(dir, 'data');
  await promisify(execFile)('mariadb-install-db', [
    '--no-defaults',
    `--datadir=${datadir}`,
    '--user=root',
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
  ]);
  const port = await freePort();
  const server: ChildProcess = spawn(
    'mariadbd',
    [
      '--no-defaults',
      `--datadir=${datadir}`,
      '--user=root',
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--socket=${path.join(dir, 'sock')}`,
      '--skip-log-bin',
      '--innodb-buffer-pool-size=16M',
    ],
    { stdio: 'ignore' },
  );
  const admin = { host: '127.0.0.1', port, user: 'root', password: '' };
  await eventually(
    'the private mariadbd accepts connections',
    async () => {
      try {
        const conn = await mysql.createConnection(admin);
        await conn.query('CREATE DATABASE IF NOT EXISTS tkgate');
        await conn.end();
        return true;
      } catch {
        return undefined;
      }
    },
    60_000,
  );
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  // The third field of /proc/<pid>/stat, after the command name in parentheses: T once stopped.
  const state = () =>
    readFileSync(`/proc/${server.pid}/stat`, 'latin1')
      .replace(/^.*\) /s, '')
      .split(' ')[0];
  return {
    url: `mysql://root@127.0.0.1:${port}/tkgate`,
    pause: async () => {
      server.kill('SIGSTOP');
      await eventually('the private mariadbd stopped', () => state() === 'T');
    },
    resume: () => server.kill('SIGCONT'),
    clientConnections: async () => {
      const conn = await mysql.createConnection(admin);
      try {
        const [rows] = await conn.query("SELECT COUNT(*) AS n FROM information_schema.processlist WHERE id <> CONNECTION_ID() AND command <> 'Daemon'");
        return Number((rows as Array<{ n: number }>)[0]!.n);
      } finally {
        await conn.end();
      }
    },
    kill: async () => {
      server.kill('SIGKILL');
      await exited;
    },
  };
}

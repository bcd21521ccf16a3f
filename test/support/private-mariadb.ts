import { execFile, spawn, type ChildProcess } from 'node:child_process';
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
  pause(): void;
  resume(): void;
  kill(): Promise<void>;
}

function freePort(): Promise<number> {
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
  return {
    url: `mysql://root@127.0.0.1:${port}/tkgate`,
    pause: () => server.kill('SIGSTOP'),
    resume: () => server.kill('SIGCONT'),
    kill: async () => {
      server.kill('SIGKILL');
      await exited;
    },
  };
}

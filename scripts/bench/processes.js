// Child processes for the bench: started on 127.0.0.1, ready when they print a line, RSS sampled from /proc.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts a command and resolves once `ready(line)` holds for a line of its stdout or stderr, or, with
 * `port`, once that port accepts connections (for servers that print nothing).
 */
export function startProcess(command, args, { env = {}, cwd, ready = () => false, port, timeoutMs = 15_000 } = {}) {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    let done = false;
    const succeed = (line) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ child, pid: child.pid, line, output: () => output, stop: () => stopProcess(child) });
    };
    if (port) {
      (async () => {
        while (!done && child.exitCode === null) {
          if (await canConnect(port)) return succeed('');
          await sleep(50);
        }
      })();
    }
    const timer = setTimeout(() => fail(new Error(`${command} was not ready within ${timeoutMs} ms`)), timeoutMs);
    const fail = (err) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\n${output.slice(-2000)}`));
    };
    const onData = (chunk) => {
      output += chunk;
      for (const line of String(chunk).split('\n')) {
        if (ready(line)) succeed(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => fail(new Error(`${command} exited (${code}) before it was ready`)));
  });
}

export function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export function rssMb(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return NaN;
  }
}

/** Samples a process's RSS every 100 ms until stopped; returns the peak. */
export function sampleRss(pid) {
  let peak = rssMb(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, rssMb(pid));
  };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a command is installed: it runs `command ...versionArgs` and exits 0. */
export function commandInstalled(command, versionArgs) {
  try {
    execFileSync(command, versionArgs, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

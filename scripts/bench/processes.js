// Child processes for the bench: started on 127.0.0.1, ready when they print a line, RSS sampled from /proc.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
 * Starts a command and resolves once `ready(line)` holds for a line of its output, or, with `port`, once
 * that port accepts connections (for servers that print nothing). Output goes to a file, as it would to
 * journald or a log file in production: a bench process reading a logging gateway's stdout (an access line
 * per request) would take CPU from the processes it measures. The file is read only until ready.
 */
let started = 0;
export function startProcess(command, args, { env = {}, cwd, ready = () => false, port, timeoutMs = 15_000 } = {}) {
  const logFile = path.join(outputDir(), `${path.basename(command)}-${process.pid}-${++started}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const output = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = () => {
      done = true;
      clearTimeout(timer);
      child.off('exit', onExit);
    };
    const succeed = (line) => {
      if (done) return;
      finish();
      resolve({ child, pid: child.pid, line, output, stop: () => stopProcess(child) });
    };
    const fail = (err) => {
      if (done) return;
      finish();
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\n${output().slice(-2000)}`));
    };
    const timer = setTimeout(() => fail(new Error(`${command} was not ready within ${timeoutMs} ms`)), timeoutMs);
    const onExit = (code) => fail(new Error(`${command} exited (${code}) before it was ready`));
    child.once('exit', onExit);
    (async () => {
      while (!done) {
        if (port && (await canConnect(port))) return succeed('');
        const line = output()
          .split('\n')
          .find((l) => ready(l));
        if (line !== undefined) return succeed(line);
        await sleep(25);
      }
    })();
  });
}

/** Where the bench's child processes write their output: one directory per bench run. */
let outputDirectory;
function outputDir() {
  if (!outputDirectory) {
    const dir = (outputDirectory = mkdtempSync(path.join(tmpdir(), 'tkgate-bench-output-')));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return outputDirectory;
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

/**
 * Whether this process runs under a real-time policy (`chrt -f`/`-r`: field 41 of /proc/self/stat is 1 or 2),
 * which every child inherits. A cluster of tkgate workers started so never finishes starting on 2 cores: its
 * primary and workers, at one fixed priority, keep the cores from the threads they wait for.
 */
export function realtimeScheduled() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const policy = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
    return policy === 1 || policy === 2;
  } catch {
    return false;
  }
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

/** The `--env K=V` arguments (repeatable) as an environment: each cut at its first `=`, so a value keeps its own. */
export function envArguments(args) {
  return Object.fromEntries(args.flatMap((arg, i) => (args[i - 1] === '--env' ? [[arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]] : [])));
}

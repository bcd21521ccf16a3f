import { spawn } from 'node:child_process';
import { tkgateBin } from './paths.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `tkgate` binary to completion. */
export function runCli(args: string[], options: { stdin?: string; env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tkgateBin, ...args], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

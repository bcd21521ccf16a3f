import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import got, { type Headers } from 'got';

/** One entry of `fleet.inventory` (docs/fleet.md, "The inventory"). */
export type InventorySource =
  { file: string } | { url: string; refresh?: number; headers?: Readonly<Record<string, string>> } | { command: readonly string[]; refresh?: number };

/** The most bytes a source's text may have: a larger answer is refused, never read whole. */
export const MAX_SOURCE_BYTES = 16 * 1024 * 1024;
/** A URL or command source is read again this often by default. */
export const DEFAULT_REFRESH_MS = 60_000;
/** A URL that does not answer within this (each try), or a command that does not end within it, has failed. */
export const SOURCE_TIMEOUT_MS = 30_000;
/** What a failing command's stderr contributes to its log line. */
const STDERR_SHOWN_BYTES = 1_024;

/** A source's text, with whether it is JSON (URL and command answers, `.json` files) rather than YAML. */
export interface SourceText {
  text: string;
  json: boolean;
}

/** Why a source could not be read (its last good version stays); words safe for a log line: no header, no query. */
export class SourceUnreadable extends Error {}

/** How a source is named in problems, logs and `fleet/nodes`: a file's path, a URL without its query or credentials, a command's program. */
export function sourceLabel(source: InventorySource, baseDir: string): string {
  if ('file' in source) return path.resolve(baseDir, source.file);
  if ('url' in source) {
    try {
      const url = new URL(source.url);
      return `${url.origin}${url.pathname}`;
    } catch {
      return 'url (not a valid URL)';
    }
  }
  return `command ${path.basename(source.command[0] ?? '')}`;
}

export async function readSource(source: InventorySource, baseDir: string, signal: AbortSignal): Promise<SourceText> {
  if ('file' in source) return readInventoryFile(path.resolve(baseDir, source.file));
  if ('url' in source) return fetchInventory(source.url, source.headers ?? {}, signal);
  return runInventoryCommand(source.command, baseDir, signal);
}

async function readInventoryFile(file: string): Promise<SourceText> {
  let text: Buffer;
  try {
    text = await readFile(file);
  } catch (err) {
    throw new SourceUnreadable(`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (text.length > MAX_SOURCE_BYTES) throw new SourceUnreadable(`is larger than ${MAX_SOURCE_BYTES} bytes`);
  return { text: text.toString('utf8'), json: file.endsWith('.json') };
}

/**
 * GET of a JSON array, with got's retries (twice, on network errors and 5xx, with its backoff) and a size limit
 * counted as the body comes (a larger answer is cancelled, not buffered).
 */
async function fetchInventory(url: string, headers: Readonly<Record<string, string>>, signal: AbortSignal): Promise<SourceText> {
  const request = got(url, {
    headers: { accept: 'application/json', ...headers } as Headers,
    timeout: { request: SOURCE_TIMEOUT_MS },
    retry: { limit: 2, methods: ['GET'] },
    followRedirect: false,
    responseType: 'text',
    signal,
  });
  let tooLarge = false;
  request.on('downloadProgress', (progress: { transferred: number }) => {
    if (progress.transferred > MAX_SOURCE_BYTES && !tooLarge) {
      tooLarge = true;
      request.cancel();
    }
  });
  try {
    const response = await request;
    return { text: response.body, json: true };
  } catch (err) {
    if (tooLarge) throw new SourceUnreadable(`answered more than ${MAX_SOURCE_BYTES} bytes`);
    const status = (err as { response?: { statusCode?: number } }).response?.statusCode;
    throw new SourceUnreadable(status !== undefined ? `answered HTTP ${status}` : `could not be fetched (${(err as { code?: string }).code ?? 'error'})`);
  }
}

/**
 * Runs an inventory command as an Ansible dynamic inventory is run: its argv, no shell, in the configuration's
 * directory, with PATH as its whole environment (the gateway's own variables may hold secrets), stdout read up to
 * the size limit, killed (its process group) past the timeout or a stop.
 */
function runInventoryCommand(argv: readonly string[], cwd: string, signal: AbortSignal): Promise<SourceText> {
  return new Promise((resolve, reject) => {
    const [file, ...args] = argv;
    const child = spawn(file!, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = Buffer.alloc(0);
    let failure: string | undefined;
    const kill = (why: string) => {
      failure ??= why;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Gone already.
      }
    };
    const timer = setTimeout(() => kill(`did not end within ${SOURCE_TIMEOUT_MS / 1000} s`), SOURCE_TIMEOUT_MS);
    const onAbort = () => kill('was stopped');
    signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > MAX_SOURCE_BYTES) kill(`printed more than ${MAX_SOURCE_BYTES} bytes`);
      else out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < STDERR_SHOWN_BYTES) err = Buffer.concat([err, chunk]).subarray(0, STDERR_SHOWN_BYTES);
    });
    child.once('error', (error: NodeJS.ErrnoException) => (failure ??= `could not be started (${error.code ?? 'error'})`));
    child.once('close', (code, killedBy) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (failure === undefined && code !== 0) failure = killedBy ? `was killed by ${killedBy}` : `exited with ${code}`;
      if (failure !== undefined) reject(new SourceUnreadable(failure, { cause: err.length > 0 ? err.toString('utf8') : undefined }));
      else resolve({ text: Buffer.concat(out).toString('utf8'), json: true });
    });
  });
}

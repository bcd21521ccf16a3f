import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Socket } from 'node:net';
import type { Logger } from '@tkgate/core';
import type { HelperEvents, HelperLink } from './helper-link.js';
import type { ProcessSpec } from './run-process.js';
import type { HelperReply, HelperRequest, SerializedOutcome } from './spawn-helper.js';

/**
 * The native spawn helper (native/spawn-helper.c), talked to over fd 3 in length-prefixed frames; the
 * frame layout is described at the top of the C file. stdout comes back as bytes, never as a string.
 */

const REQ_RUN = 1;
const REQ_ABORT = 2;
const REP_HELLO = 0;
const REP_STARTED = 1;
const REP_DONE = 2;
/** The outcome reasons in the C helper's order (its OUT_* enum). */
const REASONS = ['ok', 'exit_code', 'signal', 'timeout', 'output_too_large', 'spawn_failed', 'aborted'] as const;
/** The C helper refuses larger frames (MAX_FRAME). */
const MAX_FRAME = 64 * 1024 * 1024;
/** The largest reply: a DONE frame with the C helper's most stdout (1 GiB) and stderr (16 KiB). */
const MAX_REPLY = 1024 * 1024 * 1024 + 64 * 1024;
const signalNames = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

type RunSpec = Omit<ProcessSpec, 'signal' | 'onStart'>;

/** One RUN frame; strings with a NUL byte cannot be passed to exec (Node's spawn refuses them too). */
function encodeRun(id: number, spec: RunSpec): Buffer {
  const strings = (list: string[]) => list.map((item) => Buffer.from(item));
  const file = Buffer.from(spec.file);
  const cwd = spec.cwd === undefined ? undefined : Buffer.from(spec.cwd);
  const args = strings(spec.args);
  const env = strings(Object.entries(spec.env).map(([name, value]) => `${name}=${value}`));
  const stdin = spec.stdin === undefined ? undefined : Buffer.from(spec.stdin);
  const all = [file, ...(cwd ? [cwd] : []), ...args, ...env, ...(stdin ? [stdin] : [])];
  if (all.some((bytes) => bytes.includes(0))) throw new Error('an argument, the environment or cwd holds a NUL byte');
  const size = 4 + 1 + 4 + 4 + 8 + 1 + 4 + 4 + all.reduce((sum, bytes) => sum + 4 + bytes.length, 0);
  if (size > MAX_FRAME) throw new Error(`the run is ${size} bytes, over the spawn helper's ${MAX_FRAME}-byte frame limit`);
  const frame = Buffer.allocUnsafe(size);
  let at = frame.writeUInt32LE(size - 4, 0);
  at = frame.writeUInt8(REQ_RUN, at);
  at = frame.writeUInt32LE(id, at);
  at = frame.writeUInt32LE(Math.min(spec.timeoutMs, 0xffff_ffff), at);
  at = frame.writeBigUInt64LE(BigInt(spec.maxOutputBytes), at);
  at = frame.writeUInt8((stdin ? 1 : 0) | (cwd ? 2 : 0), at);
  const put = (bytes: Buffer) => {
    at = frame.writeUInt32LE(bytes.length, at);
    at += bytes.copy(frame, at);
  };
  put(file);
  if (cwd) put(cwd);
  at = frame.writeUInt32LE(args.length, at);
  args.forEach(put);
  at = frame.writeUInt32LE(env.length, at);
  env.forEach(put);
  if (stdin) put(stdin);
  return frame;
}

function encodeAbort(id: number): Buffer {
  const frame = Buffer.allocUnsafe(9);
  frame.writeUInt32LE(5, 0);
  frame.writeUInt8(REQ_ABORT, 4);
  frame.writeUInt32LE(id, 5);
  return frame;
}

function decodeDone(frame: Buffer): SerializedOutcome {
  const reason = REASONS[frame.readUInt8(9)] ?? 'spawn_failed';
  const exitCode = frame.readInt32LE(10);
  const signal = frame.readInt32LE(14);
  let at = 18;
  const take = () => {
    const length = frame.readUInt32LE(at);
    const bytes = frame.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    return bytes;
  };
  const stdout = take();
  const stderr = take().toString('utf8');
  const cause = take().toString('utf8');
  if (reason === 'ok') return { ok: true, stdout, stderr };
  if (reason === 'exit_code') return { ok: false, reason, exitCode, stderr };
  if (reason === 'signal') return { ok: false, reason, signal: signalNames.get(signal) ?? String(signal), stderr };
  if (reason === 'spawn_failed') return { ok: false, reason, stderr, cause };
  return { ok: false, reason, stderr };
}

/** Gathers the link's bytes into whole frames without copying a large frame more than once. */
class FrameReader {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private need = 0;

  constructor(private readonly onFrame: (frame: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    for (;;) {
      if (this.need === 0) {
        if (this.bytes < 4) return;
        this.need = 4 + this.take(4, false).readUInt32LE(0);
        if (this.need < 9 || this.need > MAX_REPLY) throw new Error(`a reply frame of ${this.need} bytes`);
      }
      if (this.bytes < this.need) return;
      const frame = this.take(this.need, true);
      this.need = 0;
      this.onFrame(frame);
    }
  }

  /** The first n bytes, removed from the queue when `consume`. */
  private take(n: number, consume: boolean): Buffer {
    const first = this.chunks[0]!;
    const whole = first.length >= n ? first.subarray(0, n) : Buffer.concat(this.chunks, n);
    if (!consume) return whole;
    let left = n;
    while (left > 0) {
      const head = this.chunks[0]!;
      if (head.length > left) {
        this.chunks[0] = head.subarray(left);
        left = 0;
      } else {
        this.chunks.shift();
        left -= head.length;
      }
    }
    this.bytes -= n;
    return whole;
  }
}

/** `sh` starts the helper in the background and exits, so it is re-parented to init (see node-link.ts). */
export function launchNativeHelper(binary: string, events: HelperEvents, log: Logger): HelperLink {
  const channel = spawn('/bin/sh', ['-c', 'exec "$0" </dev/null &', binary], {
    stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
    env: {},
  });
  const link = channel.stdio[3] as Socket;
  let gone = false;
  const end = () => {
    if (gone) return;
    gone = true;
    events.gone();
  };
  channel.on('error', (err) => {
    log.error('exec spawn helper could not start', { err });
    end();
  });
  const reader = new FrameReader((frame) => {
    const type = frame.readUInt8(4);
    const id = frame.readUInt32LE(5);
    let reply: HelperReply | undefined;
    if (type === REP_HELLO) reply = { type: 'hello', pid: frame.readUInt32LE(9) };
    else if (type === REP_STARTED) reply = { type: 'started', id, pid: frame.readUInt32LE(9) };
    else if (type === REP_DONE) reply = { type: 'done', id, outcome: decodeDone(frame) };
    if (reply) events.reply(reply);
  });
  link.on('data', (chunk: Buffer) => {
    try {
      reader.push(chunk);
    } catch (err) {
      // A frame this side cannot read: the helper is not to be trusted further, so it is treated as dead.
      log.error('exec spawn helper sent a malformed frame', { err });
      link.destroy();
    }
  });
  // The link's end is the helper's end (sh, the other holder of fd 3, exits at once).
  link.on('error', () => undefined);
  link.once('close', end);
  const write = (frame: Buffer) => {
    if (!link.destroyed && link.writable) link.write(frame);
  };
  return {
    send: (message: HelperRequest) => {
      if (message.type === 'abort') return write(encodeAbort(message.id));
      let frame: Buffer;
      try {
        frame = encodeRun(message.id, message.spec);
      } catch (err) {
        const outcome: SerializedOutcome = { ok: false, reason: 'spawn_failed', stderr: '', cause: (err as Error).message };
        queueMicrotask(() => events.reply({ type: 'done', id: message.id, outcome }));
        return;
      }
      write(frame);
    },
    close: () => link.end(),
  };
}

import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Logger } from '@tkgate/core';
import { frameLink, type FrameCodec, type HelperEvents, type HelperLink } from './helper-link.js';
import type { ProcessSpec } from './run-process.js';
import type { SerializedOutcome } from './spawn-helper.js';

/**
 * The native spawn helper (native/spawn-helper.c), talked to over fd 3 in length-prefixed frames; the
 * frame layout is described at the top of the C file. stdout comes back as bytes, never as a string.
 */

const REQ_RUN = 1;
const REQ_ABORT = 2;
const REQ_WATCH = 3;
const REQ_UNWATCH = 4;
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

/** A frame of a type and a u32 alone: ABORT (a run id), WATCH and UNWATCH (a process group). */
function encodeSmall(type: number, value: number): Buffer {
  const frame = Buffer.allocUnsafe(9);
  frame.writeUInt32LE(5, 0);
  frame.writeUInt8(type, 4);
  frame.writeUInt32LE(value, 5);
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

const codec: FrameCodec = {
  minBytes: 9,
  maxBytes: MAX_REPLY,
  decode: (frame) => {
    const type = frame.readUInt8(4);
    const id = frame.readUInt32LE(5);
    if (type === REP_HELLO) return { type: 'hello', pid: frame.readUInt32LE(9) };
    if (type === REP_STARTED) return { type: 'started', id, pid: frame.readUInt32LE(9) };
    if (type === REP_DONE) return { type: 'done', id, outcome: decodeDone(frame) };
    return undefined;
  },
  encode: (message) => {
    if (message.type === 'run') return encodeRun(message.id, message.spec);
    if (message.type === 'abort') return encodeSmall(REQ_ABORT, message.id);
    return encodeSmall(message.type === 'watch' ? REQ_WATCH : REQ_UNWATCH, message.pgid);
  },
};

/** The helper is its own launcher: it forks, and its first process exits (helper-link.ts, frameLink). */
export function launchNativeHelper(binary: string, events: HelperEvents, log: Logger): HelperLink {
  const launcher = spawn(binary, [], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'], env: {} });
  return frameLink(launcher, codec, events, log);
}

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { deserialize, serialize } from 'node:v8';
import type { Logger } from '@tkgate/core';
import { framed } from './frames.js';
import { frameLink, type FrameCodec, type HelperEvents, type HelperLink } from './helper-link.js';
import type { HelperReply } from './spawn-helper.js';

const helperScript = fileURLToPath(new URL('./spawn-helper.js', import.meta.url));

/**
 * The launcher, a Node process of its own (no shell: the image has none): it starts the helper in a session of
 * its own with the link (requests on fd 3, replies on fd 4) and an empty environment, and exits
 * (helper-link.ts, frameLink).
 */
const LAUNCHER =
  "require('node:child_process').spawn(process.argv[1], process.argv.slice(2), { detached: true, stdio: ['ignore', 'inherit', 'inherit', 3, 4], env: {} }).unref()";

/** The largest frame either way: a reply with 1 GiB of stdout (as the native helper's most) and its stderr. */
export const MAX_NODE_FRAME = 1024 * 1024 * 1024 + 64 * 1024;

/** Messages are V8's serialization (as Node's advanced IPC): a command's stdout travels as bytes. */
const codec: FrameCodec = {
  minBytes: 5,
  maxBytes: MAX_NODE_FRAME,
  decode: (frame) => deserialize(frame.subarray(4)) as HelperReply,
  encode: (message) => framed(serialize(message)),
};

/** A Node spawn helper (spawn-helper.ts). */
export function launchNodeHelper(events: HelperEvents, log: Logger): HelperLink {
  const launcher = spawn(process.execPath, ['-e', LAUNCHER, '--', process.execPath, '--max-old-space-size=64', helperScript], {
    stdio: ['ignore', 'inherit', 'inherit', 'pipe', 'pipe'],
    env: {},
  });
  return frameLink(launcher, codec, events, log, 4);
}

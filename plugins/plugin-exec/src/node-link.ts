import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@tkgate/core';
import type { HelperEvents, HelperLink } from './helper-link.js';
import type { HelperReply } from './spawn-helper.js';

const helperScript = fileURLToPath(new URL('./spawn-helper.js', import.meta.url));

/**
 * How a helper starts: `sh` starts it in the background and exits at once, so the helper is re-parented to
 * init (or the nearest subreaper) and the gateway is no ancestor of any command. Its environment is empty
 * but for Node's IPC channel variables, and no argument names the gateway's pid; the IPC channel (fd 3)
 * passes through sh to it.
 */
const LAUNCH = ['-c', 'exec "$0" "$@" </dev/null &', process.execPath, '--max-old-space-size=64', helperScript];

/** A Node spawn helper (spawn-helper.ts), talked to over Node's IPC channel. */
export function launchNodeHelper(events: HelperEvents, log: Logger): HelperLink {
  // Binary outputs travel as bytes (structured clone), not as JSON-escaped strings on the helper's heap.
  const channel = spawn('/bin/sh', LAUNCH, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: {}, serialization: 'advanced' });
  channel.on('error', (err) => {
    log.error('exec spawn helper could not start', { err });
    if (!channel.connected) events.gone();
  });
  channel.on('message', (reply: HelperReply) => events.reply(reply));
  // sh exits at once; the helper's end is the end of its IPC channel.
  channel.once('disconnect', () => events.gone());
  return {
    send: (message) => {
      if (channel.connected) channel.send(message);
    },
    close: () => {
      if (channel.connected) channel.disconnect();
    },
  };
}

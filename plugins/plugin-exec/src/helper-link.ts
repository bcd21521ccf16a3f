import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Logger } from '@tkgate/core';
import { FrameReader } from './frames.js';
import type { HelperReply, HelperRequest, SerializedOutcome } from './spawn-helper.js';

/** What a spawn helper tells the pool: its replies, and its end (exited, killed, or never started). */
export interface HelperEvents {
  reply(reply: HelperReply): void;
  gone(): void;
}

/** The pool's end of one spawn helper, whichever kind (Node or native), over frames on its link. */
export interface HelperLink {
  send(message: HelperRequest): void;
  /** The gateway is stopping: the helper kills its commands' groups (and the watched ones) and exits. */
  close(): void;
}

export type LaunchHelper = (events: HelperEvents) => HelperLink;

/** How one kind of helper's frames read and write (frames.ts). */
export interface FrameCodec {
  minBytes: number;
  maxBytes: number;
  /** A reply frame (its length prefix included); undefined for a frame of an unknown type. */
  decode(frame: Buffer): HelperReply | undefined;
  /** Throws when the request cannot be sent (an argument with a NUL byte, a frame over the helper's limit). */
  encode(message: HelperRequest): Buffer;
}

/**
 * The gateway's end of a helper that `launcher` starts without a shell: the launcher (the native helper
 * itself before it forks, or a short-lived Node process) starts the helper in a session of its own and
 * exits at once, so the helper is re-parented to init (or the nearest subreaper) and the gateway is no
 * ancestor of any command; the link is the launcher's fd 3 (a socket pair), which the helper keeps. The
 * link's end is therefore the helper's end: the launcher, its other holder, is gone. A Node helper reads
 * requests on fd 3 and writes replies on fd 4 (`repliesFd`): a failed write (the gateway gone) ends a Node
 * socket, and the requests sent before it must still be read (a watched group to kill among them).
 */
export function frameLink(launcher: ChildProcess, codec: FrameCodec, events: HelperEvents, log: Logger, repliesFd = 3): HelperLink {
  const link = launcher.stdio[3] as Socket;
  const replies = launcher.stdio[repliesFd] as Socket;
  let gone = false;
  const end = () => {
    if (gone) return;
    gone = true;
    events.gone();
  };
  launcher.on('error', (err) => {
    log.error('exec spawn helper could not start', { err });
    end();
  });
  const reader = new FrameReader(
    (frame) => {
      const reply = codec.decode(frame);
      if (reply) events.reply(reply);
    },
    codec.minBytes,
    codec.maxBytes,
  );
  replies.on('data', (chunk: Buffer) => {
    try {
      reader.push(chunk);
    } catch (err) {
      // A frame this side cannot read: the helper is not to be trusted further, so it is treated as dead.
      log.error('exec spawn helper sent a malformed frame', { err });
      replies.destroy();
      link.destroy();
    }
  });
  link.on('error', () => undefined);
  replies.on('error', () => undefined);
  replies.once('close', end);
  const write = (frame: Buffer) => {
    if (!link.destroyed && link.writable) link.write(frame);
  };
  return {
    send: (message) => {
      let frame: Buffer;
      try {
        frame = codec.encode(message);
      } catch (err) {
        if (message.type !== 'run') return;
        const outcome: SerializedOutcome = { ok: false, reason: 'spawn_failed', stderr: '', cause: (err as Error).message };
        queueMicrotask(() => events.reply({ type: 'done', id: message.id, outcome }));
        return;
      }
      write(frame);
    },
    close: () => link.end(),
  };
}

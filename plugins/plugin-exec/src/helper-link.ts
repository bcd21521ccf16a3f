import type { HelperReply, HelperRequest } from './spawn-helper.js';

/** What a spawn helper tells the pool: its replies, and its end (exited, killed, or never started). */
export interface HelperEvents {
  reply(reply: HelperReply): void;
  gone(): void;
}

/** The pool's end of one spawn helper, whichever kind (Node over IPC, or the native one over frames). */
export interface HelperLink {
  send(message: HelperRequest): void;
  /** The gateway is stopping: the helper kills its commands' groups and exits. */
  close(): void;
}

export type LaunchHelper = (events: HelperEvents) => HelperLink;

import { coreError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { ENDED_STATUSES } from '../run-record.js';
import type { OutputChunk, RunStore } from '../run-store.js';

/** How a run ended, as the SSE `end` event says it. */
export interface RunEnding {
  status: string;
  exit_code: number | null;
}

export interface FeedListener {
  /**
   * A chunk for the follower. A promise says its socket is full: it is told nothing more (the feed keeps its
   * place) until the promise settles, so a follower that never reads holds the socket's buffer, never the output.
   */
  chunk(chunk: OutputChunk): Promise<void> | void;
  end(ending: RunEnding): void;
  /** The gateway stops following (it is stopping): the follower's stream ends without an `end`. */
  gone(): void;
}

/** How often a feed of a run running elsewhere reads the database for new chunks. */
export const FOLLOW_POLL_MS = 250;

/**
 * One run's output on this instance, shared by all its followers here: every chunk from the first, in order,
 * then its end. A run running here is fed by its writer as batches are stored; any other run by one poller
 * reading the chunks table (its status first, then the chunks after the last one: a run's chunks are all stored
 * before it is ended), so a hundred followers cost the database what one does.
 */
/** How many followers a run and a user may have on this instance (runs.max_followers_per_run, ..._per_user). */
export interface FollowerLimits {
  perRun: number;
  perUser: number;
}

/** One follower of a feed: its place (the index of the next chunk to tell it) and whether its socket is full. */
class Follower {
  waiting = false;
  ended = false;
  constructor(
    readonly listener: FeedListener,
    public next: number,
  ) {}
}

class RunFeed {
  /** The run's chunks, once per instance whatever the number of followers (bounded by the run's max output). */
  readonly chunks: OutputChunk[] = [];
  ending: RunEnding | undefined;
  readonly listeners = new Set<Follower>();
  local = false;
  polling = false;
  private timer: NodeJS.Timeout | undefined;
  private next: (() => Promise<void>) | undefined;
  private reading = false;
  private pokedWhileReading = false;

  constructor(
    readonly id: string,
    private readonly store: RunStore,
    private readonly log: Logger,
    private readonly dropped: (feed: RunFeed) => void,
    private readonly pollMs: () => number,
  ) {}

  push(chunks: readonly OutputChunk[]): void {
    for (const chunk of chunks) {
      // Seq numbers are consecutive: a chunk seen already (a poll racing a local start) is not told twice.
      if (chunk.seq <= (this.chunks.at(-1)?.seq ?? 0)) continue;
      this.chunks.push(chunk);
    }
    for (const follower of this.listeners) this.tell(follower);
  }

  /** Tells a follower the chunks after its place, until its socket is full; then the end once it has them all. */
  private tell(follower: Follower): void {
    while (!follower.waiting && follower.next < this.chunks.length) {
      const room = follower.listener.chunk(this.chunks[follower.next++]!);
      if (room) {
        follower.waiting = true;
        void room.then(
          () => this.resume(follower),
          () => this.resume(follower),
        );
      }
    }
    if (!follower.waiting && this.ending && !follower.ended) {
      follower.ended = true;
      this.listeners.delete(follower);
      follower.listener.end(this.ending);
      this.dropIfIdle();
    }
  }

  private resume(follower: Follower): void {
    follower.waiting = false;
    if (this.listeners.has(follower)) this.tell(follower);
  }

  finish(ending: RunEnding): void {
    if (this.ending) return;
    this.ending = ending;
    this.stopPolling();
    for (const follower of [...this.listeners]) this.tell(follower);
    this.dropIfIdle();
  }

  follow(after: number, wanted: FeedListener): () => void {
    // Chunks a poll brings later start from the first: each follower gets only those after its own.
    const listener: FeedListener = { ...wanted, chunk: (chunk) => (chunk.seq > after ? wanted.chunk(chunk) : undefined) };
    const follower = new Follower(listener, 0);
    this.listeners.add(follower);
    if (!this.local && !this.ending) this.startPolling();
    this.tell(follower);
    return () => {
      this.listeners.delete(follower);
      this.dropIfIdle();
    };
  }

  /** The run starts on this instance: its writer feeds it from now on. */
  becomeLocal(): void {
    this.local = true;
    this.stopPolling();
  }

  dropIfIdle(): void {
    if (this.listeners.size === 0 && (!this.local || this.ending)) {
      this.stopPolling();
      this.dropped(this);
    }
  }

  /** Stops following (the gateway stops): followers' streams end without an `end`, so clients resume elsewhere. */
  close(): void {
    this.stopPolling();
    const followers = [...this.listeners];
    this.listeners.clear();
    for (const follower of followers) follower.listener.gone();
  }

  private startPolling(): void {
    if (this.polling) return;
    this.polling = true;
    const poll = async () => {
      this.reading = true;
      try {
        await this.poll();
      } catch (err) {
        this.log.warn('run output could not be read', { run_id: this.id, error: (err as Error).message });
      }
      if (this.pokedWhileReading && this.polling) {
        this.pokedWhileReading = false;
        return poll();
      }
      this.reading = false;
      if (this.polling) this.timer = setTimeout(poll, this.pollMs());
    };
    this.next = poll;
    void poll();
  }

  /** New output was stored elsewhere (a wake-up): read now, or right after the read under way. */
  poke(): void {
    if (!this.polling || !this.next) return;
    if (this.reading) {
      this.pokedWhileReading = true;
      return;
    }
    clearTimeout(this.timer);
    void this.next();
  }

  private stopPolling(): void {
    this.polling = false;
    clearTimeout(this.timer);
  }

  private async poll(): Promise<void> {
    const run = await this.store.get(this.id);
    if (!this.polling || this.local) return;
    const chunks = await this.store.chunksAfter(this.id, this.chunks.at(-1)?.seq ?? 0);
    if (!this.polling || this.local) return;
    this.push(chunks);
    if (!run || ENDED_STATUSES.has(run.status)) this.finish({ status: run?.status ?? 'lost', exit_code: run?.exit_code ?? null });
  }
}

/** The feeds of this instance, one per followed or locally running run. */
export class RunFeeds {
  private readonly feeds = new Map<string, RunFeed>();
  /** Followers on this instance by user id. */
  private readonly byUser = new Map<string, number>();

  constructor(
    private readonly store: RunStore,
    private readonly log: Logger,
    /** How long between two reads of a run running elsewhere (longer while wake-ups tell of new output). */
    private readonly pollMs: () => number = () => FOLLOW_POLL_MS,
    private readonly limits: FollowerLimits = { perRun: Infinity, perUser: Infinity },
  ) {}

  private feed(id: string): RunFeed {
    let feed = this.feeds.get(id);
    if (!feed) {
      feed = new RunFeed(id, this.store, this.log, (gone) => this.feeds.get(gone.id) === gone && this.feeds.delete(gone.id), this.pollMs);
      this.feeds.set(id, feed);
    }
    return feed;
  }

  /** Follows a run's output from chunk `after` + 1: every chunk once, in order, then its end. Returns the unfollow. */
  follow(id: string, after: number, listener: FeedListener, userId?: string): () => void {
    const existing = this.feeds.get(id);
    const perUser = userId === undefined ? 0 : (this.byUser.get(userId) ?? 0);
    if ((existing?.listeners.size ?? 0) >= this.limits.perRun || perUser >= this.limits.perUser) {
      const which = perUser >= this.limits.perUser ? 'you follow' : 'this run has';
      this.log.warn('a follower of run output was refused', { run_id: id, user_id: userId, reason: which === 'you follow' ? 'per_user' : 'per_run' });
      throw coreError('busy', `${which} as many live output streams as this gateway allows; try again later`, {
        headers: { 'Retry-After': '5' },
        details: { max_followers_per_run: this.limits.perRun, max_followers_per_user: this.limits.perUser },
      });
    }
    if (userId !== undefined) this.byUser.set(userId, perUser + 1);
    let counted = userId !== undefined;
    const unfollow = this.feed(id).follow(after, listener);
    return () => {
      if (counted && userId !== undefined) {
        counted = false;
        const left = (this.byUser.get(userId) ?? 1) - 1;
        if (left > 0) this.byUser.set(userId, left);
        else this.byUser.delete(userId);
      }
      unfollow();
    };
  }

  /** A run starting here: its chunks come from its writer. */
  startLocal(id: string): { stored(chunks: readonly OutputChunk[]): void; ended(ending: RunEnding): void } {
    const feed = this.feed(id);
    feed.becomeLocal();
    return { stored: (chunks) => feed.push(chunks), ended: (ending) => feed.finish(ending) };
  }

  /** A waiting run ended here (cancelled): its followers here hear it at once. */
  ended(id: string, ending: RunEnding): void {
    this.feeds.get(id)?.finish(ending);
  }

  /** Output of a run (every run followed here, without an id) was stored elsewhere: its followers' reader reads now. */
  poke(id?: string): void {
    if (id === undefined) for (const feed of this.feeds.values()) feed.poke();
    else this.feeds.get(id)?.poke();
  }

  close(): void {
    for (const feed of this.feeds.values()) feed.close();
    this.feeds.clear();
  }
}

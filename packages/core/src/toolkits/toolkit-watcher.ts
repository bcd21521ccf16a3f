import { statSync } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import path from 'node:path';
import type { Logger } from '../log.js';
import type { DirectoryListing } from './toolkit-directory.js';
import type { ToolkitRegistry } from './toolkit-registry.js';

export interface WatchOptions {
  /** toolkits.settle: the directory must be quiet this long before a change is applied (as one batch). */
  settleMs: number;
  /** toolkits.rescan_interval: a stat-only look at the directory this often, for lost events (0 = never). */
  rescanIntervalMs: number;
}

/** One look at the directory: when, what it saw, and since when the directory has looked like that. */
interface Look {
  at: number;
  listing: DirectoryListing;
  since: number;
}

interface DirectoryWatch {
  watcher: FSWatcher;
  /** The inode watched: a directory deleted and re-created at the same path is a new one to watch. */
  inode: number;
}

/**
 * Watches the toolkit directory and applies its changes to the registry in batches.
 *
 * - Watched: the directory's parent (the directory, or the symlink naming it, deleted, replaced or
 *   re-pointed), the directory's real path as resolved at the last look and, when that is elsewhere (a
 *   symlinked toolkits.dir), the real path's parent (the target deleted and re-created), and the
 *   directories of symlinked files' targets. In a parent only the directory's own entry counts. Every look
 *   re-resolves them, so the watch follows the directory wherever it goes.
 * - An event only says "look soon": once nothing has happened for `settle`, one look lists the files with
 *   their stat signatures and the registry applies every difference at once (a git checkout is one step).
 * - A difference no event announced (lost events on network mounts, a directory just replaced) is applied
 *   only when a second look, `settle` later, sees the same thing.
 * - A change that removes a toolkit or endpoint waits until the directory has been quiet twice `settle`:
 *   a writer that pauses mid-file does not take endpoints away.
 */
export class ToolkitWatcher {
  private readonly watches = new Map<string, DirectoryWatch>();
  /** Directories watched for one or two of their entries only (the parents): directory -> entry names. */
  private parents = new Map<string, Set<string>>();
  /** The directory's real path at the last look that found it: while it is missing, its parent is still watched. */
  private lastRealDir: string | undefined;
  private lastEventAt = Number.NEGATIVE_INFINITY;
  private trigger: string | undefined;
  private previousLook: Look | undefined;
  private timer: NodeJS.Timeout | undefined;
  private interval: NodeJS.Timeout | undefined;
  private ticking = false;
  private tickAgain = false;
  private closed = false;

  constructor(
    private readonly registry: ToolkitRegistry,
    private readonly options: WatchOptions,
    private readonly log: Logger,
  ) {}

  /** Starts watching what the registry loaded from, and the periodic rescan. */
  async start(): Promise<void> {
    const at = Date.now();
    const listing = await this.registry.look();
    this.previousLook = { at, listing, since: at };
    this.reconcile(listing);
    if (this.options.rescanIntervalMs > 0) {
      this.interval = setInterval(() => void this.tick(), this.options.rescanIntervalMs);
      this.interval.unref();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.interval);
    const watchers = [...this.watches.values()].map(({ watcher }) => watcher.close());
    this.watches.clear();
    await Promise.all(watchers);
  }

  private get dir(): string {
    return this.registry.dir;
  }

  private onEvent(watched: string, filename: string | null): void {
    // In a parent only the directory's own entry matters, not its siblings.
    const names = this.parents.get(watched);
    if (names && filename !== null && !names.has(filename)) return;
    this.lastEventAt = Date.now();
    this.trigger ??= filename === null ? watched : path.join(watched, filename);
    this.schedule(this.options.settleMs);
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), Math.max(0, ms));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.closed) return;
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    this.ticking = true;
    try {
      await this.lookAndApply();
    } catch (err) {
      this.log.error('toolkit reload failed', { dir: this.dir, err });
    } finally {
      this.ticking = false;
      if (this.tickAgain) {
        this.tickAgain = false;
        this.schedule(0);
      }
    }
  }

  private async lookAndApply(): Promise<void> {
    const { settleMs } = this.options;
    const quiet = Date.now() - this.lastEventAt;
    if (quiet < settleMs) return this.schedule(settleMs - quiet);
    const lookedAt = Date.now();
    const listing = await this.registry.look();
    const rewatched = this.reconcile(listing);
    const previous = this.previousLook;
    const announced = previous !== undefined && this.lastEventAt >= previous.at;
    const since = this.stateSince(listing, previous, announced && !rewatched, lookedAt);
    this.previousLook = { at: lookedAt, listing, since };
    const changed = this.registry.differences(listing);
    if (changed.length === 0) {
      this.trigger = undefined;
      return;
    }
    this.trigger ??= announced ? changed[0] : `rescan: ${changed[0]}`;
    const stableFor = Date.now() - since;
    if (stableFor < settleMs) {
      if (!announced && since === lookedAt) this.log.info('toolkit change found by rescan', { path: changed[0], files: changed.length });
      return this.schedule(settleMs - stableFor);
    }
    const quietFor = Date.now() - Math.max(this.lastEventAt, since);
    const outcome = await this.registry.apply(listing, this.trigger!, Math.max(0, 2 * settleMs - quietFor));
    if (outcome.postponedMs !== undefined) return this.schedule(outcome.postponedMs);
    this.trigger = undefined;
  }

  /**
   * Since when the directory has looked like this: unchanged since the previous look keeps that look's date;
   * a change an event announced dates from that event; any other change (lost events, a directory whose
   * watch was just made) dates from this look, so a second look must confirm it a settle period later.
   */
  private stateSince(listing: DirectoryListing, previous: Look | undefined, announced: boolean, lookedAt: number): number {
    if (previous && sameListing(previous.listing, listing)) return previous.since;
    return announced ? this.lastEventAt : lookedAt;
  }

  /** Watches what this look resolved; true when the directory's own watch had to be made anew. */
  private reconcile(listing: DirectoryListing): boolean {
    this.lastRealDir = listing.realDir ?? this.lastRealDir;
    const whole = new Set([...(listing.realDir ? [listing.realDir] : []), ...listing.targetDirs]);
    this.parents = new Map();
    for (const entry of new Set([this.dir, this.lastRealDir ?? this.dir])) {
      const parent = path.dirname(entry);
      if (whole.has(parent)) continue;
      this.parents.set(parent, (this.parents.get(parent) ?? new Set()).add(path.basename(entry)));
    }
    const wanted = new Set([...this.parents.keys(), ...whole]);
    for (const [dir, current] of this.watches) {
      if (!wanted.has(dir) || inodeOf(dir) !== current.inode) {
        void current.watcher.close();
        this.watches.delete(dir);
      }
    }
    let rewatched = false;
    for (const dir of wanted) {
      if (!this.watches.has(dir) && this.watchDirectory(dir) && dir === listing.realDir) rewatched = true;
    }
    return rewatched;
  }

  /**
   * One chokidar watch per directory, its direct entries only (depth 0), symlinks not followed: any event
   * just asks for a look. chokidar keeps no watch alive across its directory's deletion, which is why
   * reconcile() makes a new one whenever the path names another inode.
   */
  private watchDirectory(dir: string): boolean {
    const inode = inodeOf(dir);
    if (inode === undefined) return false;
    const watcher = watch(dir, { depth: 0, ignoreInitial: true, persistent: false, followSymlinks: false });
    watcher.on('all', (_event, changed) => this.onEvent(dir, changed === dir ? null : path.relative(dir, changed)));
    watcher.on('error', (err) => {
      this.log.debug('toolkit directory watch failed', { dir, err });
      void watcher.close();
      if (this.watches.get(dir)?.watcher === watcher) this.watches.delete(dir);
      this.onEvent(dir, null);
    });
    this.watches.set(dir, { watcher, inode });
    return true;
  }
}

function inodeOf(dir: string): number | undefined {
  try {
    return statSync(dir).ino;
  } catch {
    return undefined;
  }
}

function sameListing(a: DirectoryListing, b: DirectoryListing): boolean {
  if (a.realDir !== b.realDir || a.missing !== b.missing || a.files.size !== b.files.size) return false;
  for (const [file, signature] of a.files) if (b.files.get(file) !== signature) return false;
  return true;
}

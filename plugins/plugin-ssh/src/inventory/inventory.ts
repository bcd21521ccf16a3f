import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '@tkgate/core';
import { watch, type FSWatcher } from 'chokidar';
import type { FleetNode } from './fleet-node.js';
import { KnownHosts, parseKnownHosts, type HostKey } from './host-keys.js';
import { DEFAULT_REFRESH_MS, readSource, sourceLabel, SourceUnreadable, type InventorySource } from './inventory-sources.js';
import { parseInventoryText } from './inventory-text.js';
import { checkNodeList, describeInventoryProblem, type InventoryProblem } from './node-list.js';

export interface InventoryOptions {
  /** `fleet.inventory`: read in this order; a name belongs to the first source that had it. */
  sources: readonly InventorySource[];
  /** `fleet.known_hosts`: host keys of nodes that have none of their own (OpenSSH's format, hashed names too). */
  knownHosts?: string;
  /** Relative file paths and a command's working directory are resolved against it (the configuration's directory). */
  baseDir: string;
  log: Logger;
  /** A file must be quiet this long after a change before it is read again (one edit is often several writes). */
  settleMs?: number;
}

/** What one look at a source found: its version taken, kept back (problems), or the source unreadable. */
export interface SourceReport {
  source: string;
  /** Nodes of the source now in use (its new version when it was taken, else its last good one). */
  nodes: number;
  problems: InventoryProblem[];
  unreadable?: string;
}

/** The inventory at one moment: nodes in source order, by name, and each node's host keys. */
export interface InventorySnapshot {
  readonly version: number;
  readonly nodes: readonly FleetNode[];
  node(name: string): FleetNode | undefined;
  /** The node's own `host_key(s)` when it has them, else what `fleet.known_hosts` says of its host and port. */
  hostKeysOf(node: FleetNode): readonly HostKey[];
}

/** A node as `GET fleet/nodes` and `tkgate fleet nodes` show it: its host keys by fingerprint, never any key material. */
export interface NodeListing {
  name: string;
  host: string;
  port: number;
  user: string | null;
  labels: Readonly<Record<string, string>>;
  jump: string | null;
  source: string;
  host_keys: Array<{ type: string; fingerprint: string; marker: string | null }>;
  /** Where the keys come from: the node's own `host_key(s)`, `fleet.known_hosts`, or nowhere (it cannot be run on). */
  host_keys_from: 'node' | 'known_hosts' | 'none';
}

export function nodeListing(node: FleetNode, snapshot: InventorySnapshot): NodeListing {
  const keys = snapshot.hostKeysOf(node);
  return {
    name: node.name,
    host: node.host,
    port: node.port,
    user: node.user ?? null,
    labels: node.labels,
    jump: node.jump ?? null,
    source: node.source,
    host_keys: keys.map((key) => ({ type: key.type, fingerprint: key.fingerprint, marker: key.marker ?? null })),
    host_keys_from: node.hostKeys ? 'node' : keys.length > 0 ? 'known_hosts' : 'none',
  };
}

interface SourceState {
  readonly spec: InventorySource;
  readonly label: string;
  /** The last good version: kept while a newer one is refused or cannot be read. */
  nodes: readonly FleetNode[];
  reading?: Promise<SourceReport>;
  again?: boolean;
}

/**
 * The nodes of `fleet.inventory` (docs/fleet.md): files (hot-reloaded with chokidar, a broken edit logged and
 * the last good version kept), URLs and commands (read again every `refresh`, the last good version kept when
 * a read fails), merged in source order, and the host keys of `fleet.known_hosts` (watched the same way).
 * `load()` reads everything once (`tkgate fleet nodes`, `config check`); `watch()` then follows changes until
 * `close()`. Listeners of `onChange` hear of every new snapshot.
 */
export class Inventory {
  private readonly states: SourceState[];
  private knownHosts = new KnownHosts([]);
  private current: InventorySnapshot;
  private version = 0;
  private readonly watchers: FSWatcher[] = [];
  /** Clears the refresh intervals and pending settle timers. */
  private readonly clearTimers: Array<() => void> = [];
  private readonly listeners = new Set<(snapshot: InventorySnapshot) => void>();
  private readonly stopping = new AbortController();

  constructor(private readonly options: InventoryOptions) {
    this.states = options.sources.map((spec) => ({ spec, label: sourceLabel(spec, options.baseDir), nodes: [] }));
    this.current = this.snapshot();
  }

  get nodes(): InventorySnapshot {
    return this.current;
  }

  onChange(listener: (snapshot: InventorySnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads known_hosts and every source once, in order; resolves with what each source gave. */
  async load(): Promise<SourceReport[]> {
    await this.readKnownHosts();
    const reports: SourceReport[] = [];
    for (const state of this.states) reports.push(await this.read(state));
    return reports;
  }

  /** Follows the sources after `load()`: file events (after `settleMs` of quiet) and refresh timers; resolves once files are watched. */
  async watch(): Promise<void> {
    const settleMs = this.options.settleMs ?? 250;
    const files: Array<{ file: string; reread: () => void }> = [];
    if (this.options.knownHosts) files.push({ file: path.resolve(this.options.baseDir, this.options.knownHosts), reread: () => void this.rereadKnownHosts() });
    for (const state of this.states) {
      if ('file' in state.spec) files.push({ file: state.label, reread: () => void this.read(state) });
      else {
        const timer = setInterval(() => void this.read(state), state.spec.refresh ?? DEFAULT_REFRESH_MS);
        timer.unref();
        this.clearTimers.push(() => clearInterval(timer));
      }
    }
    for (const { file, reread } of files) {
      let settle: NodeJS.Timeout | undefined;
      // A look at the file's signature now and then, for what no event announces (a symlink's target swapped).
      let signature = '';
      void signatureOf(file).then((first) => (signature = first));
      const look = setInterval(async () => {
        const now = await signatureOf(file);
        if (now === signature) return;
        signature = now;
        clearTimeout(settle);
        settle = setTimeout(reread, settleMs);
      }, RESCAN_MS);
      look.unref();
      this.clearTimers.push(() => clearInterval(look));
      // The file's directory is watched for its name only, so a file replaced by a rename (editors, `kubectl` ConfigMaps) is seen too.
      const watcher = watch(path.dirname(file), { ignoreInitial: true, depth: 0, ignored: (entry) => entry !== path.dirname(file) && entry !== file });
      watcher.on('all', () => {
        clearTimeout(settle);
        settle = setTimeout(reread, settleMs);
      });
      watcher.on('error', (err) => this.options.log.warn('fleet inventory watch failed', { source: file, err }));
      this.watchers.push(watcher);
      this.clearTimers.push(() => clearTimeout(settle));
    }
    await Promise.all(this.watchers.map((watcher) => new Promise<void>((resolve) => watcher.once('ready', () => resolve()))));
  }

  async close(): Promise<void> {
    this.stopping.abort();
    for (const clear of this.clearTimers) clear();
    await Promise.all(this.watchers.map((watcher) => watcher.close()));
    await Promise.all(this.states.map((state) => state.reading));
  }

  /** Reads one source (at most one read of it at a time; a change meanwhile reads it once more after). */
  private read(state: SourceState): Promise<SourceReport> {
    if (state.reading) {
      state.again = true;
      return state.reading;
    }
    state.reading = this.readOnce(state).finally(() => {
      state.reading = undefined;
      if (state.again && !this.stopping.signal.aborted) {
        state.again = false;
        void this.read(state);
      }
    });
    return state.reading;
  }

  private async readOnce(state: SourceState): Promise<SourceReport> {
    const { log } = this.options;
    const kept = (fields: Partial<SourceReport>): SourceReport => ({ source: state.label, nodes: state.nodes.length, problems: [], ...fields });
    let text;
    try {
      text = await readSource(state.spec, this.options.baseDir, this.stopping.signal);
    } catch (err) {
      if (this.stopping.signal.aborted) return kept({});
      const why = err instanceof SourceUnreadable ? err.message : 'could not be read';
      log.warn('fleet inventory source unreadable; its last good version stays', {
        source: state.label,
        reason: why,
        nodes: state.nodes.length,
        ...(err instanceof SourceUnreadable && typeof err.cause === 'string' ? { stderr: err.cause } : {}),
        ...(err instanceof SourceUnreadable ? {} : { err }),
      });
      return kept({ unreadable: why });
    }
    const parsed = parseInventoryText(text.text, text.json);
    const taken = new Map<string, string>();
    for (const other of this.states) if (other !== state) for (const node of other.nodes) taken.set(node.name, other.label);
    const checked =
      'syntax' in parsed
        ? {
            problems: [
              {
                file: state.label,
                path: '',
                ...(parsed.syntax.position ? { line: parsed.syntax.position.line, column: parsed.syntax.position.column } : {}),
                message: parsed.syntax.message,
              },
            ],
          }
        : checkNodeList(state.label, parsed, taken);
    if ('problems' in checked) {
      log.warn('fleet inventory source refused; its last good version stays', {
        source: state.label,
        nodes: state.nodes.length,
        problems: checked.problems.map(describeInventoryProblem),
      });
      return kept({ problems: checked.problems });
    }
    if (!sameNodes(state.nodes, checked.nodes)) {
      state.nodes = checked.nodes;
      this.publish();
      log.info('fleet inventory source read', { source: state.label, nodes: checked.nodes.length });
    }
    return kept({});
  }

  private async readKnownHosts(): Promise<void> {
    if (!this.options.knownHosts) return;
    const file = path.resolve(this.options.baseDir, this.options.knownHosts);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      this.options.log.warn('fleet known_hosts unreadable; its last good version stays', { file, reason: (err as NodeJS.ErrnoException).code ?? 'error' });
      return;
    }
    const { entries, problems } = parseKnownHosts(text);
    if (problems.length > 0) {
      this.options.log.warn('fleet known_hosts lines left out', {
        file,
        problems: problems.slice(0, 20).map((problem) => `${path.basename(file)}:${problem.line}: ${problem.message}`),
      });
    }
    this.knownHosts = new KnownHosts(entries);
  }

  private async rereadKnownHosts(): Promise<void> {
    await this.readKnownHosts();
    this.publish();
  }

  private publish(): void {
    this.current = this.snapshot();
    for (const listener of this.listeners) listener(this.current);
  }

  private snapshot(): InventorySnapshot {
    const nodes = this.states.flatMap((state) => state.nodes);
    const byName = new Map<string, FleetNode>();
    for (const node of nodes) if (!byName.has(node.name)) byName.set(node.name, node);
    const knownHosts = this.knownHosts;
    return {
      version: ++this.version,
      nodes,
      node: (name) => byName.get(name),
      hostKeysOf: (node) => node.hostKeys ?? knownHosts.keysOf(node.host, node.port),
    };
  }
}

/** How often watched files are looked at besides their events. */
const RESCAN_MS = 5_000;

/** A file's identity and last change, through symlinks; empty while it cannot be read. */
async function signatureOf(file: string): Promise<string> {
  try {
    const stats = await stat(file);
    return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
  } catch {
    return '';
  }
}

/** Whether a source's new version is the one in use (a refresh that changed nothing publishes nothing). */
function sameNodes(a: readonly FleetNode[], b: readonly FleetNode[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}

import { open } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../db/connect.js';
import type { Logger } from '../log.js';
import type { EndpointTypes } from '../plugins/endpoint-types.js';
import { patternCache } from './client-filter.js';
import { compileToolkitText, refused, type CompileEnvironment, type CompileResult } from './compile-toolkit.js';
import type { CompiledEndpoint, CompiledToolkit } from './compiled-toolkit.js';
import { problemFields, type ToolkitProblem } from './config-issues.js';
import { readDatabaseSchema } from '../db/database-schema.js';
import { describeDatabaseError } from '../db/database-errors.js';
import { EndpointLifetimes } from './endpoint-lifetimes.js';
import { compareSnapshots, type SnapshotChanges } from './snapshot-changes.js';
import { describeFsError, listDirectory, type DirectoryListing } from './toolkit-directory.js';
import { resolveToolkits, type Resolution, type ToolkitSnapshot } from './toolkit-resolution.js';
import { decodeToolkitFile } from './toolkit-text.js';
import { MAX_RECORDED_BYTES, type ToolkitVersions } from './toolkit-versions.js';

export type { ToolkitSnapshot } from './toolkit-resolution.js';

export interface ReloadOutcome {
  snapshot: ToolkitSnapshot;
  problems: ToolkitProblem[];
  /** Set when the change was not applied yet because it removes toolkits or endpoints (see apply). */
  postponedMs?: number;
}

export interface RegistryOptions {
  /** toolkits.max_file_bytes: a larger file is refused unread. */
  maxFileBytes: number;
  /** Told every applied reload after the load at start (metrics: tkgate_toolkit_reloads_total). */
  onReload?: (outcome: ReloadOutcome, trigger: string) => void;
  /**
   * The good versions in the database (`toolkit_versions`): with `lastGoodAtStart`, a toolkit whose file is
   * refused at start is served at its last good version from there; with `record`, every toolkit served from
   * a valid file is recorded there.
   */
  versions?: { store: ToolkitVersions; lastGoodAtStart: boolean; record: boolean };
  /** The notification sinks' names (`notify` rules name one); none: every rule names a missing sink. */
  sinks?: ReadonlySet<string>;
}

export const DEFAULT_MAX_FILE_BYTES = 1_048_576;

/** Files read ahead of the compile loop: reads wait on the disk while the loop compiles (3,000 files read one by one left it idle). */
const READ_AHEAD = 16;

/**
 * The compile gives the event loop a turn after this much work, between files and between the endpoints
 * of a file, so requests (`/healthz`) wait at most about this long while thousands of files, or one file
 * of thousands of endpoints, compile (a read already yields, a reused file does not). What is left in one
 * piece: parsing one file, and one endpoint's compile. Figures: docs/performance.md, "3,000 files at once".
 */
const SLICE_MS = 10;

/** One file as last compiled: a file whose signature and content hash did not change is not compiled again. */
interface FileRecord {
  signature: string;
  hash: string | undefined;
  schema: string;
  result: CompileResult;
  /** The file's text when it compiled: what `toolkit_versions` records. */
  text?: string;
}

/**
 * The live toolkits, and the one code path that turns a toolkit directory into them: boot, every hot
 * reload, SIGHUP and `tkgate config check` all go through apply(). Incremental: only files whose content
 * changed are compiled again (all of them when the database schema changed), an endpoint whose definition
 * did not change stays the same object (its state survives), and only what changed is logged.
 */
export class ToolkitRegistry {
  private current: ToolkitSnapshot = new Map();
  private readonly compiled = new Map<string, FileRecord>();
  /** Signatures of the files the live snapshot was built from (and whether the directory was missing). */
  private applied: { files: ReadonlyMap<string, string>; missing: string | undefined } = { files: new Map(), missing: undefined };
  /** What was last logged about each refused file, so each change of it is logged once. */
  private readonly loggedRefusals = new Map<string, string>();
  private heldByUnnamed: ReadonlyMap<string, readonly string[]> = new Map();
  private queue: Promise<unknown> = Promise.resolve();
  /** Writes to `toolkit_versions` in progress, one after the other. */
  private recording: Promise<void> = Promise.resolve();
  readonly lifetimes: EndpointLifetimes;

  constructor(
    readonly dir: string,
    private readonly db: Database,
    /** The endpoint types of the loaded plugins (GET {base}/toolkit.schema.json describes their keys). */
    readonly types: EndpointTypes,
    /** Where reloads are reported (a quiet logger in all but one worker keeps them logged once). */
    private readonly log: Logger,
    private readonly options: RegistryOptions = { maxFileBytes: DEFAULT_MAX_FILE_BYTES },
  ) {
    this.lifetimes = new EndpointLifetimes(log);
  }

  get snapshot(): ToolkitSnapshot {
    return this.current;
  }

  /** Toolkit files refused as they are now (GET /readyz reports them without failing). */
  get refusedFiles(): number {
    return this.loggedRefusals.size;
  }

  /** Resolves once the versions being recorded in the database are written (before the database closes). */
  recorded(): Promise<void> {
    return this.recording;
  }

  /** The directory as it is now: file names and stat signatures, no content read. */
  look(): Promise<DirectoryListing> {
    return listDirectory(this.dir);
  }

  /** Files whose signature differs from what is live (added, changed or gone), or the directory itself. */
  differences(listing: DirectoryListing): string[] {
    if (listing.missing || this.applied.missing) return listing.missing === this.applied.missing ? [] : [this.dir];
    const { fresh, gone } = this.changedFiles(listing);
    return [...fresh, ...gone];
  }

  /** Files added or changed (fresh) and files gone, since the live snapshot was built. */
  private changedFiles(listing: DirectoryListing): { fresh: Set<string>; gone: Set<string> } {
    return {
      fresh: new Set([...listing.files].filter(([file, signature]) => this.applied.files.get(file) !== signature).map(([file]) => file)),
      gone: new Set([...this.applied.files.keys()].filter((file) => !listing.files.has(file))),
    };
  }

  /** Boot and `config check`: the directory as it is, at once. */
  load(): Promise<ReloadOutcome> {
    return this.serially(async () => this.applyNow(await this.look(), 'start', 0));
  }

  /** Rescans now, as the watcher would but without waiting for the directory to settle (SIGHUP). */
  rescan(reason: string): Promise<ReloadOutcome> {
    return this.serially(async () => this.applyNow(await this.look(), reason, 0));
  }

  /**
   * Applies a listing the watcher found settled. With `removalWaitMs` > 0, a change that would remove a
   * toolkit or an endpoint, or move one to another file, is not applied yet (a slow writer's half-written
   * file, a deploy in progress).
   */
  apply(listing: DirectoryListing, trigger: string, removalWaitMs: number): Promise<ReloadOutcome> {
    return this.serially(() => this.applyNow(listing, trigger, removalWaitMs));
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async applyNow(listing: DirectoryListing, trigger: string, removalWaitMs: number): Promise<ReloadOutcome> {
    const schema = await readDatabaseSchema(this.db);
    const env: CompileEnvironment = {
      schema,
      types: this.types,
      log: this.log,
      unchanged: (toolkit, definition) => this.liveEndpoint(toolkit, definition),
      pause: timeSlices(SLICE_MS),
      compilePattern: patternCache(),
      ...(this.options.sinks ? { sinks: this.options.sinks } : {}),
    };
    const fingerprint = schema.fingerprint();
    const records = await this.compileAll(listing, fingerprint, env);
    // Each step over every file below is tens of ms with thousands of files: requests get a turn between them
    // (nothing else changes the live state meanwhile: reloads run one at a time, and the swap is one step).
    await env.pause?.();
    const results = new Map([...records].map(([file, record]) => [file, record.result]));
    const lastGood = trigger === 'start' && this.options.versions?.lastGoodAtStart ? await this.lastGoodVersions(results, env) : new Map();
    const resolution = resolveToolkits(results, {
      snapshot: lastGood.size > 0 ? lastGood : this.current,
      ...this.changedFiles(listing),
      heldByUnnamed: this.heldByUnnamed,
      missingDirectory: listing.missing,
    });
    await env.pause?.();
    const changes = compareSnapshots(this.current, resolution.next);
    await env.pause?.();
    for (const [file, record] of records) this.compiled.set(file, record);
    for (const file of this.compiled.keys()) if (!records.has(file)) this.compiled.delete(file);
    if (changes.drastic && removalWaitMs > 0) return { snapshot: this.current, problems: resolution.problems, postponedMs: removalWaitMs };

    this.current = resolution.next;
    this.heldByUnnamed = resolution.heldByUnnamed;
    const wasMissing = this.applied.missing;
    this.applied = { files: listing.files, missing: listing.missing };
    this.report({ listing, wasMissing, records, resolution, changes, trigger });
    this.reportLastGood(lastGood, resolution, trigger);
    this.lifetimes.load(changes.loaded);
    this.lifetimes.retire(changes.retired);
    await env.pause?.();
    const recording = this.recordVersions(records);
    if (trigger === 'start') await recording;
    const outcome = { snapshot: this.current, problems: resolution.problems };
    if (trigger !== 'start') this.options.onReload?.(outcome, trigger);
    return outcome;
  }

  /**
   * At start, the last good version in the database of each toolkit a refused file means to define (by the
   * name it declares, or, when none can be read, by the file's stem), compiled as that file: resolving against
   * these holds each of them as hot reload holds a live toolkit. A stored version that no longer compiles
   * (the schema or the plugins changed) is left out.
   */
  private async lastGoodVersions(results: ReadonlyMap<string, CompileResult>, env: CompileEnvironment): Promise<Map<string, CompiledToolkit>> {
    const wanted = new Map<string, string>();
    const defined = new Set([...results.values()].flatMap((result) => ('toolkit' in result ? [result.toolkit.name] : [])));
    for (const [file, result] of results) {
      if ('toolkit' in result) continue;
      const name = result.name ?? path.basename(file, path.extname(file));
      if (!defined.has(name) && !wanted.has(name)) wanted.set(name, file);
    }
    const seeds = new Map<string, CompiledToolkit>();
    if (wanted.size === 0) return seeds;
    const stored = await this.options.versions!.store.lastGood([...wanted.keys()]);
    for (const [name, version] of stored) {
      const file = wanted.get(name)!;
      const compiled = await compileOrRefuse(file, version.content, env);
      if ('toolkit' in compiled && compiled.toolkit.name === name) seeds.set(name, compiled.toolkit);
      else
        this.log.error('toolkit has no usable last good version', {
          toolkit: name,
          file: path.basename(file),
          recorded_at: new Date(version.recordedAt).toISOString(),
        });
    }
    return seeds;
  }

  /** Says, as an error, which toolkits serve their last good version from the database rather than their file. */
  private reportLastGood(lastGood: ReadonlyMap<string, CompiledToolkit>, resolution: Resolution, trigger: string): void {
    const served = resolution.held.filter((held) => lastGood.get(held.toolkit) === this.current.get(held.toolkit));
    for (const held of served) {
      this.log.error('toolkit served at its last good version from the database', { toolkit: held.toolkit, reason: held.reason, files: held.files, trigger });
    }
  }

  /** Records each toolkit served from a valid file whose version is not yet the newest recorded (in the background, after the recordings before). */
  private recordVersions(records: ReadonlyMap<string, FileRecord>): Promise<void> {
    const versions = this.options.versions;
    if (!versions?.record) return this.recording;
    const due: Array<{ name: string; hash: string; content: string }> = [];
    for (const toolkit of this.current.values()) {
      const record = records.get(toolkit.file);
      if (!record?.text || !record.hash || !('toolkit' in record.result) || record.result.toolkit !== toolkit) continue;
      if (versions.store.isNewest(toolkit.name, record.hash)) continue;
      if (Buffer.byteLength(record.text) > MAX_RECORDED_BYTES) continue;
      due.push({ name: toolkit.name, hash: record.hash, content: record.text });
    }
    if (due.length === 0) return this.recording;
    // In name order: instances recording at once lock rows in the same order.
    due.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.recording = this.recording
      .then(() => versions.store.record(due))
      .catch((err: unknown) => this.log.warn('could not record the toolkit versions', { toolkits: due.length, ...describeDatabaseError(err) }));
    return this.recording;
  }

  /** A live endpoint of the toolkit with exactly this definition. */
  private liveEndpoint(toolkit: string, definition: string): CompiledEndpoint | undefined {
    for (const byMethod of this.current.get(toolkit)?.routes.values() ?? []) {
      for (const endpoint of byMethod.values()) if (endpoint.definition === definition) return endpoint;
    }
    return undefined;
  }

  /** Every file of the listing compiled in order, its reads started ahead and the event loop given a turn between slices. */
  private async compileAll(listing: DirectoryListing, schema: string, env: CompileEnvironment): Promise<Map<string, FileRecord>> {
    const records = new Map<string, FileRecord>();
    const toRead = [...listing.files].filter(([file, signature]) => this.reusable(file, schema)?.signature !== signature).map(([file]) => file);
    const reads = readAhead(toRead, (file) => this.read(file), READ_AHEAD);
    for (const [file, signature] of listing.files) {
      records.set(file, await this.compile(file, signature, schema, env, reads));
      const pause = env.pause?.();
      if (pause) await pause;
    }
    return records;
  }

  /** The last compile of the file when it compiled on this schema: reused if the file's content is the same. */
  private reusable(file: string, schema: string): FileRecord | undefined {
    const last = this.compiled.get(file);
    return last && last.schema === schema && 'toolkit' in last.result ? last : undefined;
  }

  /** The file's compile result: the last one when neither its content nor the schema changed. Refused files are tried again. */
  private async compile(
    file: string,
    signature: string,
    schema: string,
    env: CompileEnvironment,
    reads: (file: string) => Promise<FileRead>,
  ): Promise<FileRecord> {
    const last = this.reusable(file, schema);
    if (last?.signature === signature) return last;
    const read = await reads(file);
    if ('problem' in read) return { signature, hash: read.hash, schema, result: refused(file, [{ path: [], message: read.problem }]) };
    if (last?.hash === read.hash) return { ...last, signature };
    const result = await compileOrRefuse(file, read.text, env);
    return { signature, hash: read.hash, schema, result, ...('toolkit' in result && { text: read.text }) };
  }

  private async read(file: string): Promise<FileRead> {
    let handle;
    try {
      handle = await open(file);
      const { size } = await handle.stat();
      if (size > this.options.maxFileBytes)
        return { problem: `is ${size} bytes, larger than toolkits.max_file_bytes (${this.options.maxFileBytes})`, hash: undefined };
      return decodeToolkitFile(await handle.readFile());
    } catch (err) {
      return { problem: `cannot be read: ${describeFsError(err)}`, hash: undefined };
    } finally {
      await handle?.close();
    }
  }

  /** Logs what changed: refused files once per change, duplicates and kept versions at every reload. */
  private report(r: {
    listing: DirectoryListing;
    wasMissing: string | undefined;
    records: Map<string, FileRecord>;
    resolution: Resolution;
    changes: SnapshotChanges;
    trigger: string;
  }): void {
    const { trigger } = r;
    if (r.listing.missing && !r.wasMissing)
      this.log.warn('toolkit directory unavailable', { dir: this.dir, reason: r.listing.missing, kept: [...this.current.keys()] });
    if (!r.listing.missing && r.wasMissing) this.log.info('toolkit directory available', { dir: this.dir, real_path: r.listing.realDir });
    this.reportRefusals(r.records, trigger);
    for (const duplicate of r.resolution.duplicates) {
      this.log.warn('toolkit defined in several files', { toolkit: duplicate.toolkit, files: duplicate.files, served_from: duplicate.kept ?? null, trigger });
    }
    for (const held of r.resolution.held) {
      this.log.warn('toolkit kept at its last good version', { toolkit: held.toolkit, reason: held.reason, files: held.files, trigger });
    }
    for (const toolkit of r.changes.added) this.log.info('toolkit loaded', { toolkit: toolkit.name, file: path.basename(toolkit.file), trigger });
    for (const { before, after, removedEndpoints } of r.changes.changed) {
      const fields = { toolkit: after.name, file: path.basename(after.file), trigger };
      if (before.file !== after.file) this.log.warn('toolkit now defined by another file', { ...fields, previous_file: path.basename(before.file) });
      if (removedEndpoints.length > 0) this.log.warn('toolkit endpoints removed', { ...fields, endpoints: removedEndpoints });
      this.log.info('toolkit reloaded', fields);
    }
    for (const toolkit of r.changes.removed) this.log.warn('toolkit removed', { toolkit: toolkit.name, file: path.basename(toolkit.file), trigger });
  }

  private reportRefusals(records: Map<string, FileRecord>, trigger: string): void {
    for (const [file, record] of records) {
      if ('toolkit' in record.result) {
        this.loggedRefusals.delete(file);
        continue;
      }
      const key = `${record.hash}:${JSON.stringify(record.result.problems)}`;
      if (this.loggedRefusals.get(file) === key) continue;
      this.loggedRefusals.set(file, key);
      // At start a refused file leaves its toolkit at its last good version, or out: an error, not a hot reload's warning.
      const level = trigger === 'start' ? 'error' : 'warn';
      for (const problem of record.result.problems) this.log[level]('toolkit file refused', { ...problemFields(problem), reason: problem.message, trigger });
    }
    for (const file of this.loggedRefusals.keys()) if (!records.has(file)) this.loggedRefusals.delete(file);
  }
}

type FileRead = { text: string; hash: string } | { problem: string; hash: string | undefined };

/**
 * A pause for CompileEnvironment: once `ms` of work has run since the last turn, a promise that gives the
 * event loop one (setImmediate: after the requests and I/O already waiting); before that, nothing to wait for.
 */
function timeSlices(ms: number): () => Promise<void> | undefined {
  let sliceStart = performance.now();
  return () => {
    if (performance.now() - sliceStart < ms) return undefined;
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      sliceStart = performance.now();
    });
  };
}

/**
 * `read` of each file, started in order up to `depth` files ahead of the one asked for: ask for the files
 * in that order, each once. `read` must not reject.
 */
function readAhead<T>(files: string[], read: (file: string) => Promise<T>, depth: number): (file: string) => Promise<T> {
  const started = new Map<string, Promise<T>>();
  const position = new Map(files.map((file, index) => [file, index]));
  let next = 0;
  return (file) => {
    const until = Math.min(files.length, (position.get(file) ?? next) + depth + 1);
    for (; next < until; next++) started.set(files[next]!, read(files[next]!));
    const reading = started.get(file) ?? read(file);
    started.delete(file);
    return reading;
  };
}

/** A plugin whose check() throws refuses only this file; every other file's change still applies. */
async function compileOrRefuse(file: string, text: string, env: CompileEnvironment): Promise<CompileResult> {
  try {
    return await compileToolkitText(file, text, env);
  } catch (err) {
    return refused(file, [{ path: [], message: `could not be checked: ${(err as Error).message}` }]);
  }
}

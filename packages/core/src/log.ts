/**
 * A small structured logger: one JSON object per line on stdout, so ops can grep or ship it.
 * Secrets never go through here: callers log token hashes' prefixes at most, never tokens.
 */
import { fstatSync, writeSync } from 'node:fs';
import { jsonString } from './json/json-string.js';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
const rank: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

export type LogFields = Record<string, unknown>;

/**
 * A line's fields written as JSON members already (`"status":200,"path":"/x"`), for the one line written per
 * request, whose shape is fixed (the access line, ops/request-log.ts): JSON.stringify of its object cost
 * several times the text built by hand (docs/performance.md, "The access line"). The
 * text must be valid members, none named time,
 * level, msg or err.
 */
export class JsonMembers {
  constructor(readonly text: string) {}
}

export interface Logger {
  error(msg: string, fields?: LogFields | JsonMembers): void;
  warn(msg: string, fields?: LogFields | JsonMembers): void;
  info(msg: string, fields?: LogFields | JsonMembers): void;
  debug(msg: string, fields?: LogFields | JsonMembers): void;
}

export type LogSink = (line: string) => void;

/**
 * Lines of one event-loop turn are written to stdout together: with an access line per request, one
 * write per line cost a system call per request. Whatever is pending is written synchronously at exit.
 */
let pending = '';
/**
 * stdout a regular file (`tkgate start >> gateway.log`): Node writes one synchronously anyway (its SyncWriteStream), but
 * first copies the text into a Buffer, scanning it twice for its UTF-8 length; writeSync writes the text itself, at about
 * half the cost per line (docs/performance.md, "The access line written to a file"). A pipe, a socket or a terminal
 * keeps process.stdout, which knows when one is full.
 */
const stdoutIsFile = ((): boolean => {
  try {
    return fstatSync(1).isFile();
  } catch {
    return false;
  }
})();
function flushStdout(): void {
  const text = pending;
  pending = '';
  if (!text) return;
  if (stdoutIsFile) {
    try {
      writeSync(1, text);
      return;
    } catch {
      // A full disk, say: process.stdout reports it as it always did.
    }
  }
  process.stdout.write(text);
}
process.once('exit', () => {
  try {
    if (pending) writeSync(1, pending);
    void flattenedAt; // read once: a variable only ever written is one a linter, or a compiler, may drop
  } catch {
    // stdout is gone or full at exit: nothing more can be done.
  }
  pending = '';
});
/**
 * A character of each line read as it is added: reading one makes V8 flatten the line's text (the many small
 * strings it was joined from) now, while they are still in the processor's cache. Left to the turn's write, the
 * flatten of some twenty lines' pieces, touched last many requests before, was a status call's largest single cost
 * in the logger (docs/performance.md, "The access line written to a file"). Kept so that the read is not optimised away.
 */
let flattenedAt = 0;
const writeStdout: LogSink = (line) => {
  if (!pending) setImmediate(flushStdout);
  flattenedAt = line.charCodeAt(line.length >> 1);
  pending += line + '\n';
};

function describeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const described: Record<string, unknown> = { message: err.message, name: err.name };
  if (err.stack) described.stack = err.stack;
  if (err.cause !== undefined) described.cause = describeError(err.cause);
  return described;
}

/** Field names a line sets itself: a caller's field of the same name replaces it (the slow path below). */
const OWN_FIELDS = ['time', 'level', 'msg', 'err'];

/** A line's fields as JSON members; undefined when one is named like a field of the line's own (it must win: merged). */
function membersOf(fields: LogFields | JsonMembers | undefined): string | undefined {
  if (fields instanceof JsonMembers) return fields.text;
  if (fields === undefined) return '';
  if (OWN_FIELDS.some((name) => Object.hasOwn(fields, name))) return undefined;
  return JSON.stringify(fields).slice(1, -1);
}

export function createLogger(level: LogLevel = 'info', sink: LogSink = writeStdout): Logger {
  // One ISO timestamp per millisecond: under load many lines share it (an access line per request). Its
  // text up to the second is made once a second: Date's toISOString cost more than the rest of the access
  // line (docs/performance.md, "The access line"), on every line of a gateway that answers less than one
  // request per millisecond.
  let stampedAt = -1;
  let stamp = '';
  let secondAt = -1;
  let secondText = '';
  const now = (): string => {
    const ms = Date.now();
    if (ms !== stampedAt) {
      stampedAt = ms;
      const milli = ms % 1000;
      if (ms - milli !== secondAt) {
        secondAt = ms - milli;
        secondText = new Date(secondAt).toISOString().slice(0, -4); // "2026-11-24T16:42:57."
      }
      stamp = `${secondText}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
    }
    return stamp;
  };
  const emit = (at: LogLevel) => {
    // `","level":…,"msg":…` of the level's last message: the same message line after line (the access line's
    // `request`) is one piece of text, not three to join and escape again.
    let lastMsg: string | undefined;
    let levelAndMsg = '';
    return (msg: string, fields?: LogFields | JsonMembers) => {
      if (rank[at] > rank[level]) return;
      // A usual line is its fields as JSON members after the three of its own, with no copy of them.
      const members = membersOf(fields);
      if (members !== undefined) {
        if (msg !== lastMsg) {
          lastMsg = msg;
          levelAndMsg = `","level":"${at}","msg":${jsonString(msg)}`;
        }
        sink(members ? `{"time":"${now()}${levelAndMsg},${members}}` : `{"time":"${now()}${levelAndMsg}}`);
        return;
      }
      const own = fields as LogFields;
      const record: LogFields = { time: now(), level: at, msg, ...own };
      if (own.err !== undefined) record.err = describeError(own.err);
      sink(JSON.stringify(record));
    };
  };
  return { error: emit('error'), warn: emit('warn'), info: emit('info'), debug: emit('debug') };
}

/** A logger whose lines all carry `fields` (a line's own fields win); scopes nest. */
export function scopedLogger(log: Logger, fields: LogFields): Logger {
  let members: string | undefined;
  const withScope = (own: JsonMembers) => new JsonMembers([(members ??= JSON.stringify(fields).slice(1, -1)), own.text].filter(Boolean).join(','));
  const at = (emit: Logger['info']) => (msg: string, own?: LogFields | JsonMembers) =>
    emit(msg, own instanceof JsonMembers ? withScope(own) : own ? { ...fields, ...own } : fields);
  return { error: at(log.error), warn: at(log.warn), info: at(log.info), debug: at(log.debug) };
}

/**
 * The command line a node's sshd runs. sshd hands it to the user's login shell as one string, so every argv
 * element is quoted for a POSIX shell, and the command runs inside a small POSIX sh wrapper that makes a cancel
 * end the command on the node itself (docs/fleet.md, "Cancel and timeouts on the node"):
 *
 * - stdin carries one line first: the request context (JSON has no raw newline), or an empty line. The command's
 *   stdin is that context and then end of file (or /dev/null without one).
 * - The command starts under `setsid`, in a session and process group of its own; the wrapper reports its id on
 *   stderr (`␞tkgate <token> start <pgid>`), then reads the rest of stdin: `TERM` or `KILL` lines signal the whole
 *   group. When stdin ends (the gateway's ssh is gone: a gateway stopped or killed, a connection lost), the group
 *   gets SIGTERM and, `grace` seconds later, SIGKILL: nothing is left running on a node nobody watches.
 * - Once the command exits, whatever it left in its group is killed (as exec does on the gateway's host), and the
 *   wrapper reports the exit status (`␞tkgate <token> exit <status>`) before it exits with it. That line tells a
 *   command that exited 255 from ssh's own 255, and a finished command from a lost connection.
 *
 * The token is random per node and run, so neither a login script's output nor the command can be taken for a
 * report by chance. The node needs a POSIX sh and `setsid` (util-linux or busybox: every Linux distribution).
 */
const WRAPPER = [
  'token=$1 grace=$2; shift 2',
  "IFS= read -r context || { printf 'tkgate: the request context did not arrive\\n' >&2; exit 125; }",
  "command -v setsid >/dev/null 2>&1 || { printf 'tkgate: this node has no setsid (util-linux or busybox): the command did not run\\n' >&2; exit 127; }",
  'exec 3<&0',
  'if [ -n "$context" ]; then printf \'%s\' "$context" | setsid "$@" 3<&- & else setsid "$@" </dev/null 3<&- & fi',
  'pid=$!',
  'printf \'\\036tkgate %s start %s\\n\' "$token" "$pid" >&2',
  '( while IFS= read -r line; do case $line in TERM) kill -s TERM -- "-$pid";; KILL) kill -s KILL -- "-$pid";; esac; done',
  '  kill -s TERM -- "-$pid" && sleep "$grace" && kill -s KILL -- "-$pid" ) <&3 >/dev/null 2>&1 &',
  'reader=$!',
  'exec 3<&-',
  'wait "$pid" 2>/dev/null',
  'status=$?',
  'kill -s KILL -- "-$pid" 2>/dev/null',
  'kill "$reader" 2>/dev/null',
  'printf \'\\036tkgate %s exit %s\\n\' "$token" "$status" >&2',
  'exit "$status"',
].join('\n');

/** The byte that opens the wrapper's reports on stderr (ASCII record separator). */
export const REPORT_MARK = 0x1e;

/**
 * One argument quoted for a POSIX shell: inside single quotes nothing is special (`$`, backquotes, `;`, `\`,
 * newlines), and a single quote is closed, escaped and reopened. A NUL byte cannot be part of any argument.
 */
export function shellQuote(argument: string): string {
  if (argument.includes('\0')) throw new RangeError('an argument of a remote command cannot hold a NUL character');
  return `'${argument.replaceAll("'", "'\\''")}'`;
}

/** The string sshd runs: the wrapper under /bin/sh, its token and grace, then the command's argv, all quoted. */
export function remoteCommand(argv: readonly string[], token: string, graceSeconds: number): string {
  return ['exec', '/bin/sh', '-c', shellQuote(WRAPPER), 'tkgate', token, String(graceSeconds), ...argv.map(shellQuote)].join(' ');
}

/**
 * The longest command string a node's sshd can hand its login shell: one argument of `sh -c` (Linux refuses an
 * argument over 128 KiB). The argv, the context with `context: argument` included, must fit in it.
 */
export const MAX_REMOTE_COMMAND_BYTES = 131_071;

/** Whether an argv fits in one remote command (the wrapper and the quoting counted). */
export function remoteCommandFits(argv: readonly string[]): boolean {
  return Buffer.byteLength(remoteCommand(argv, '0'.repeat(16), 99_999)) <= MAX_REMOTE_COMMAND_BYTES;
}

/** What the wrapper reported, read off the node's stderr. */
export interface WrapperReports {
  /** The command's process group on the node, once it started there. */
  startedGroup?: number;
  /** The command's exit status (128 + n for a signal, as a shell says it), once it ended there. */
  exitStatus?: number;
}

/**
 * Takes the wrapper's report lines out of the node's stderr as it streams: bytes pass on at once, except the few
 * that might be the start of a report split across chunks (from a record separator on), held until the next
 * chunk shows what they are.
 */
export class ReportFilter {
  readonly reports: WrapperReports = {};
  private readonly prefix: Buffer;
  private held = Buffer.alloc(0);

  constructor(token: string) {
    this.prefix = Buffer.from(`\x1etkgate ${token} `);
  }

  /** The bytes of `chunk` (and of what was held) that are the command's own. */
  push(chunk: Buffer): Buffer {
    let data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    this.held = Buffer.alloc(0);
    const out: Buffer[] = [];
    for (;;) {
      const mark = data.indexOf(REPORT_MARK);
      if (mark < 0) {
        out.push(data);
        break;
      }
      out.push(data.subarray(0, mark));
      const rest = data.subarray(mark);
      const known = Math.min(rest.length, this.prefix.length);
      if (!rest.subarray(0, known).equals(this.prefix.subarray(0, known))) {
        out.push(rest.subarray(0, 1)); // a record separator of the command's own
        data = rest.subarray(1);
        continue;
      }
      const end = rest.indexOf(0x0a, known);
      if (end < 0) {
        if (rest.length <= this.prefix.length + MAX_REPORT_BYTES) {
          this.held = Buffer.from(rest);
          break;
        }
        out.push(rest.subarray(0, 1)); // too long for a report: the command's own bytes
        data = rest.subarray(1);
        continue;
      }
      const report = /^(start|exit) (\d{1,10})$/.exec(rest.toString('latin1', this.prefix.length, end));
      if (!report) {
        out.push(rest.subarray(0, 1));
        data = rest.subarray(1);
        continue;
      }
      if (report[1] === 'start') this.reports.startedGroup ??= Number(report[2]);
      else this.reports.exitStatus ??= Number(report[2]);
      data = rest.subarray(end + 1);
    }
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** What is still held when the stream ends: the command's own bytes after all. */
  end(): Buffer {
    const rest = this.held;
    this.held = Buffer.alloc(0);
    return rest;
  }
}

/** A report's words after the prefix: `start 4242` or `exit 255`. */
const MAX_REPORT_BYTES = 20;

import { scriptWriter } from '../support/executables.js';
import { tempDir } from '../support/paths.js';

/** The commands of the suites that run runs on several instances, and the directory they write their marks to. */
export function runCommands(prefix: string) {
  const script = scriptWriter(`${prefix}-bin-`);
  const marks = tempDir(`${prefix}-marks-`);
  return {
    marks,
    /** Says which gateway runs it (its parent), prints a line every 100 ms, ignores SIGTERM. */
    ticker: script(
      'ticker',
      'trap "" TERM; echo $PPID > "$MARKS/$TKGATE_RUN_ID.gateway"; echo $$ > "$MARKS/$TKGATE_RUN_ID.pid"; i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done',
    ),
    /** Logs its start and end to one file: the two lines of a run are never apart when runs never overlap. */
    serial: script('serial', 'echo "start $TKGATE_RUN_ID" >> "$MARKS/serial.log"; sleep 0.2; echo "end $TKGATE_RUN_ID" >> "$MARKS/serial.log"'),
    /** Appends its run id to one file, once per start. */
    once: script('once', 'echo "$TKGATE_RUN_ID" >> "$MARKS/starts.log"'),
  };
}

export const ENDED = ['succeeded', 'failed', 'timed_out', 'cancelled', 'lost'];

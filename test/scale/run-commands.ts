import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { call, toolkitClient } from '../support/http.js';
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
    /** Says which gateway runs it, then ends by itself after SECONDS. */
    lasting: script('lasting', 'echo $PPID > "$MARKS/$TKGATE_RUN_ID.gateway"; echo $$ > "$MARKS/$TKGATE_RUN_ID.pid"; sleep "$SECONDS_TO_RUN"; echo done'),
    /** Logs its start and end to one file: the two lines of a run are never apart when runs never overlap. */
    serial: script('serial', 'echo "start $TKGATE_RUN_ID" >> "$MARKS/serial.log"; sleep 0.2; echo "end $TKGATE_RUN_ID" >> "$MARKS/serial.log"'),
    /** Appends its run id to one file, once per start. */
    once: script('once', 'echo "$TKGATE_RUN_ID" >> "$MARKS/starts.log"'),
  };
}

export const ENDED = ['succeeded', 'failed', 'timed_out', 'cancelled', 'lost'];

/** The calls of those suites, as the signed-in user whose token `tokenOf` gives: start a run, read it, wait for its end. */
export function runCalls(tokenOf: () => string, deadlineMs: number) {
  const ask = async (gateway: GatewayProcess, endpoint: string, payload: Record<string, unknown> = {}) => {
    const reply = await toolkitClient(gateway.base, tokenOf()).post('ops', endpoint, payload);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
    return reply.body.data.run_id as string;
  };
  const runOn = async (gateway: GatewayProcess, id: string) => (await call('GET', `${gateway.base}/runs/${id}`, { token: tokenOf() })).body.data;
  const ended = (gateway: GatewayProcess, id: string) =>
    eventually(
      `run ${id} ends`,
      async () => {
        const run = await runOn(gateway, id);
        return ENDED.includes(run.status) ? run : undefined;
      },
      deadlineMs,
    );
  return { ask, runOn, ended };
}

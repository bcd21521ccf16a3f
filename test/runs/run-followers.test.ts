import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { scriptWriter } from '../support/executables.js';
import { call, toolkitClient } from '../support/http.js';
import { rssMb } from '../support/process-memory.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

const OUTPUT_BYTES = 32 * 1024 * 1024;
const script = scriptWriter('tkgate-run-followers-bin-');
/** 32 MiB of 64-byte lines, as fast as the pipe takes them. */
const big = script('big', `yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789a | head -c ${OUTPUT_BYTES}`);

const ops = {
  name: 'ops',
  type: 'app',
  endpoints: [{ path: 'big', method: 'POST', type: 'exec', run: 'async', command: [big], context: 'none', max_output_bytes: 2 * OUTPUT_BYTES }],
};

/** A follower that sends the SSE request, takes the first bytes (it is answered) and then never reads. */
async function stalledFollower(base: string, path: string, token: string): Promise<Socket> {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(
    `GET ${url.pathname.replace(/\/$/, '')}${path} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`,
  );
  const head = await new Promise<string>((resolve) => socket.once('data', (data: Buffer) => resolve(data.toString('latin1'))));
  socket.pause();
  expect(head).to.match(/^HTTP\/1\.1 200 /);
  return socket;
}

/** Followers of a run's live output that do not read hold their socket's buffer, never a copy of the output. */
for (const dialect of dialects) {
  describe(`runs: stalled followers of a large output (${dialect.name})`, function () {
    this.timeout(120_000);
    const s = withGateway(
      dialect,
      [{ username: 'ann', power: 10 }],
      { runs: { max_followers_per_run: 6, max_followers_per_user: 10 } },
      { toolkitsDir: toolkitDir({ 'ops.yaml': ops }), process: true },
    );

    it('keeps memory bounded while six followers stall, refuses a seventh with 503 busy, and takes followers again once they close', async () => {
      const token = await s.login('ann');
      const pid = s.gateway.child!.pid!;
      const before = await rssMb(pid);
      const id = (await toolkitClient(s.gateway.base, token).post('ops', 'big', {})).body.data.run_id as string;
      const sockets: Socket[] = [];
      for (let n = 0; n < 6; n++) sockets.push(await stalledFollower(s.gateway.base, `/runs/${id}/output`, token));
      const seventh = await fetch(`${s.gateway.base}/runs/${id}/output`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
      expect(seventh.status).to.equal(503);
      expect(((await seventh.json()) as { error: { code: string } }).error.code).to.equal('busy');
      let peak = before;
      await eventually(
        'the run ends',
        async () => {
          peak = Math.max(peak, await rssMb(pid));
          // A kept-alive socket the busy gateway closed as this request was sent is reset: asked again.
          const answer = await call('GET', `${s.gateway.base}/runs/${id}`, { token }).catch(() => undefined);
          if (answer === undefined) return undefined;
          // While 32 MiB are being stored, a read may time out (503 unavailable): asked again.
          if (answer.status !== 200) return undefined;
          const run = answer.body.data;
          if (['failed', 'timed_out', 'cancelled', 'lost'].includes(run.status)) expect(run).to.include({ status: 'succeeded' });
          // Its result would be all of its stdout: past MAX_RESULT_BYTES none is kept (the output holds it).
          return run.status === 'succeeded' && run.output_bytes === OUTPUT_BYTES && run.result === null;
        },
        90_000,
      );
      // A few samples more with the run ended and its followers still stalled.
      for (let n = 0; n < 5; n++) peak = Math.max(peak, await rssMb(pid));
      // The run itself (its chunks, their batches, the driver) costs ~10x its output in RSS here whether or not
      // anyone follows; each stalled follower used to add a copy of the output on top (+190 MB for six).
      expect(peak - before, `RSS grew ${Math.round(peak - before)} MB`).to.be.below(420);
      for (const socket of sockets) socket.destroy();
      await eventually('a follower is taken again', async () => {
        const again = await fetch(`${s.gateway.base}/runs/${id}/output?after=1000000`, {
          headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
        });
        const body = again.status === 200 ? await again.text() : '';
        return again.status === 200 && body.includes('event: end');
      });
    });
  });
}

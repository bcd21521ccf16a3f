import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** One probe: when it was sent (ms since the epoch), how long until its answer, and the status (or the error's code). */
export interface Probe {
  sent: number;
  ms: number;
  status: number | string;
}

/**
 * The probing loop, in a process of its own: one GET at a time, a pause of `gap` ms between them, a line of
 * JSON per answer; it ends when its stdin closes. A process of its own so that what is measured is the
 * gateway's latency, not the test process's loop (busy reading the gateway's log lines).
 */
const PROBER = `
const [url, gap] = [process.argv[1], Number(process.argv[2])];
let stopping = false;
process.stdin.on('end', () => (stopping = true)).resume();
(async () => {
  while (!stopping) {
    const sent = Date.now();
    const status = await fetch(url, { signal: AbortSignal.timeout(60000) }).then(
      async (reply) => (await reply.text(), reply.status),
      (err) => String(err.cause?.code ?? err.name),
    );
    process.stdout.write(JSON.stringify({ sent, ms: Date.now() - sent, status }) + '\\n');
    await new Promise((resolve) => setTimeout(resolve, gap));
  }
})();
`;

/** Probes `url` (a steady stream of GETs, one at a time) until stop(), which resolves with every probe. */
export function startProber(url: string, gapMs = 20): { stop(): Promise<Probe[]> } {
  const child = spawn(process.execPath, ['-e', PROBER, url, String(gapMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const probes: Probe[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => probes.push(JSON.parse(line) as Probe));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    async stop() {
      child.stdin!.end();
      await exited;
      return probes;
    },
  };
}

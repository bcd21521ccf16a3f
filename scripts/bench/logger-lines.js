// node scripts/bench/logger-lines.js <tkgate|unbatched|pino>: CPU per access line of tkgate's logger (lines of one
// event-loop turn in one write), the same writing each line on its own, and pino (npm install pino first;
// not a dependency). Lines come in batches of 100 per turn, like requests under load; pipe stdout away.
import { createLogger } from '../../packages/core/dist/log.js';

const which = process.argv[2];
const N = 200_000;
const line = (i) => ({
  method: 'GET',
  path: '/api/auth/status',
  route: 'auth/status',
  status: 200,
  duration_ms: 0.123,
  bytes: 321,
  request_id: '955d8e49-8004-4ffd-b3b1-44d485d2f8b4',
  client: '127.0.0.1',
  user_id: i,
});
let log;
if (which === 'pino') {
  const { default: pino } = await import('pino');
  const p = pino(
    { base: undefined, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    pino.destination({ dest: 1, sync: false, minLength: 4096 }),
  );
  log = { info: (msg, fields) => p.info(fields, msg) };
} else if (which === 'unbatched') log = createLogger('info', (l) => process.stdout.write(l + '\n'));
else log = createLogger('info');
// Lines come in batches of 100 per event-loop turn, like requests do under load.
const start = process.cpuUsage();
let i = 0;
await new Promise((resolve) => {
  const turn = () => {
    for (let k = 0; k < 100; k++) log.info('request', line(i++));
    if (i < N) setImmediate(turn);
    else resolve();
  };
  turn();
});
const used = process.cpuUsage(start);
process.stderr.write(`${which}: ${((used.user + used.system) / N).toFixed(2)} µs CPU per line\n`);

// The load generator: wrk when it is installed (C, cheap on a 2-core machine), else autocannon.
// Both report requests/s and latency percentiles for a bounded duration at a fixed connection count.
import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

const hasWrk = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    return err.status === 1; // wrk --version prints its version and exits 1
  }
})();

export const loadGenerator = hasWrk ? 'wrk' : 'autocannon';

/**
 * @param {{url: string, method?: string, headers?: Record<string,string>, body?: string, connections: number, durationS: number, rate?: number, force?: 'autocannon'}} load
 * @returns {Promise<{rps: number, p50: number, p99: number, errors: number, non2xx: number}>} latencies in ms
 */
export function runLoad(load) {
  if (hasWrk && !load.rate && load.force !== 'autocannon') return runWrk(load);
  return runAutocannon(load);
}

function runAutocannon({ url, method = 'GET', headers = {}, body, connections, durationS, rate }) {
  return new Promise((resolve, reject) => {
    autocannon({ url, method, headers, body, connections, duration: durationS, overallRate: rate }, (err, result) => {
      if (err) return reject(err);
      resolve({
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        errors: result.errors + result.timeouts,
        non2xx: result.non2xx,
      });
    });
  });
}

const WRK_SCRIPT = `
wrk.method = os.getenv("BENCH_METHOD")
local body = os.getenv("BENCH_BODY")
if body ~= "" then wrk.body = body end
`;

function runWrk({ url, method = 'GET', headers = {}, body = '', connections, durationS }) {
  const script = path.join(tmpdir(), 'tkgate-bench.lua');
  writeFileSync(script, WRK_SCRIPT);
  const args = ['-t1', `-c${connections}`, `-d${durationS}s`, '--latency', '-s', script];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { env: { ...process.env, BENCH_METHOD: method, BENCH_BODY: body }, timeout: (durationS + 30) * 1000 }, (err, stdout) => {
      if (err) return reject(new Error(`wrk failed: ${err.message}\n${stdout}`));
      const number = (pattern) => Number(pattern.exec(stdout)?.[1] ?? 0);
      const latency = (pct) => {
        const match = new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(stdout);
        if (!match) return NaN;
        return Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2]];
      };
      const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
      resolve({
        rps: number(/Requests\/sec:\s+([\d.]+)/),
        p50: latency(50),
        p99: latency(99),
        errors: socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
        non2xx: number(/Non-2xx or 3xx responses: (\d+)/),
      });
    });
  });
}

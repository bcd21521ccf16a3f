// The bench's table: printed, and written as JSON and Markdown.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const cell = (value, digits = 1) => (value === null || value === undefined || Number.isNaN(value) ? '-' : typeof value === 'number' ? value.toFixed(digits) : String(value));

function rows(report) {
  return report.results.map((r) => [
    r.scenario,
    cell(r.target.rps, 0),
    cell(r.target.p50),
    cell(r.target.p99),
    cell(r.target.peak_rss_mb),
    r.target.non2xx === undefined || r.target.non2xx === null ? '-' : String(r.target.non2xx + r.target.errors),
    r.baseline ? r.baseline.name : '-',
    cell(r.baseline?.rps, 0),
    cell(r.baseline?.p99),
    r.ratio === null ? '-' : `${r.ratio.toFixed(2)}x`,
    r.goal ?? '-',
    r.met === null ? '-' : r.met ? 'yes' : 'NO',
  ]);
}

const HEADER = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'peak RSS MB', 'failed', 'baseline', 'baseline req/s', 'baseline p99', 'ratio', 'target', 'met'];

function notes(report) {
  const memory = report.results.find((r) => r.rss_delta_mb !== undefined);
  const storm = report.results.find((r) => r.status_during);
  const lines = [];
  if (memory) lines.push(`Memory: ${memory.rss_empty_mb} MB RSS with no sessions, ${memory.target.peak_rss_mb} MB with ${memory.scenario.split(': ')[1]} (+${memory.rss_delta_mb} MB), each the lowest reading over ${report.plan.settleMs / 1000} s idle (V8 shrinks its heap about 15 s after start); ${memory.rss_just_loaded_mb} MB right after loading them.`);
  const withCpu = report.results.filter((r) => r.target.cpu_ms_per_req !== undefined);
  if (withCpu.length) lines.push(`Gateway CPU per request (user + system, with its child processes): ${withCpu.map((r) => `${r.scenario} ${cell(r.target.cpu_ms_per_req, 3)} ms`).join('; ')}.`);
  if (storm) lines.push(`Login storm: ${cell(storm.target.rps, 0)} logins/s; status p99 ${cell(storm.status_during.p99)} ms at 200 req/s meanwhile.`);
  return lines;
}

export function printTable(report) {
  const table = [HEADER, ...rows(report)];
  const widths = HEADER.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  const line = (row) => row.map((c, i) => (i === 0 || i === 6 || i === 10 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  process.stdout.write(`\n${line(HEADER)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows(report).map(line).join('\n')}\n\n${notes(report).join('\n')}\n`);
}

export function writeReports(dir, report) {
  writeFileSync(path.join(dir, 'latest.json'), JSON.stringify(report, null, 2) + '\n');
  const md = [
    `# tkgate bench (${report.mode})`,
    '',
    `${report.date}; Node ${report.node}; ${report.cores} cores shared by load generator, gateway and upstreams; ${report.load_generator}, ${report.connections} connections; warm-up ${report.plan.warmupS} s, measured ${report.plan.measureS} s per target.`,
    '',
    `| ${HEADER.join(' | ')} |`,
    `|${HEADER.map(() => '---').join('|')}|`,
    ...rows(report).map((row) => `| ${row.join(' | ')} |`),
    '',
    ...notes(report),
    '',
  ].join('\n');
  writeFileSync(path.join(dir, 'latest.md'), md);
}

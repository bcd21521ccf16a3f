// The bench's tables: printed, and written as JSON and Markdown. One table per scenario: a row per
// target (tkgate first, then baselines and peers), medians of the rounds with the req/s range, then the
// scenario's goals with the ratio reached.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const cell = (value, digits = 1) =>
  value === null || value === undefined || Number.isNaN(value) ? '-' : typeof value === 'number' ? value.toFixed(digits) : String(value);

const HEADER = ['scenario', 'target', 'req/s', 'range', 'p50 ms', 'p99 ms', 'CPU µs/req', 'failed', 'disturbed'];

function tableRows(report) {
  return report.results.flatMap((result) =>
    result.rows.map((row, i) => [
      i === 0 ? result.scenario : '',
      row.name,
      cell(row.rps, 0),
      row.rps_min === undefined || row.rps_min === null ? '-' : `${cell(row.rps_min, 0)}-${cell(row.rps_max, 0)}`,
      cell(row.p50),
      cell(row.p99),
      cell(row.cpu_us_per_req, 0),
      row.non2xx === undefined ? '-' : String(row.non2xx + row.errors),
      row.rounds ? `${row.disturbed_rounds}/${row.rounds}${row.repeated_windows ? ` (${row.repeated_windows} re-measured)` : ''}` : '-',
    ]),
  );
}

function goalLines(report) {
  return report.results.flatMap((result) =>
    result.goals.map(
      (goal) =>
        `${result.scenario}: ${goal.goal}: ${goal.ratio === null ? '' : `${goal.ratio.toFixed(2)}x, `}${goal.met === null ? 'not judged' : goal.met ? 'met' : 'MISSED'}`,
    ),
  );
}

function notes(report) {
  const memory = report.results.find((r) => r.rows[0]?.rss_delta_mb !== undefined)?.rows[0];
  const storm = report.results.find((r) => r.scenario.startsWith('6.'));
  const lines = [];
  if (memory)
    lines.push(
      `Memory: ${memory.rss_empty_mb} MB RSS with no sessions, ${memory.peak_rss_mb} MB with the sessions in the database (+${memory.rss_delta_mb} MB), each the lowest reading over ${report.plan.settleMs / 1000} s idle; ${memory.rss_just_loaded_mb} MB right after start.`,
    );
  if (storm) lines.push(`Login storm: ${cell(storm.rows[0].rps, 0)} logins/s; status p99 ${cell(storm.rows[1].p99)} ms at 200 req/s meanwhile.`);
  lines.push('Disturbed: rounds in which processes outside the bench used more than 10% of a core (the window was measured again, the calmest kept).');
  return lines;
}

export function printTable(report) {
  const rows = tableRows(report);
  const table = [HEADER, ...rows];
  const widths = HEADER.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  const line = (row) => row.map((c, i) => (i <= 1 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  process.stdout.write(
    `\n${line(HEADER)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(line).join('\n')}\n\n${goalLines(report).join('\n')}\n\n${notes(report).join('\n')}\n`,
  );
}

export function writeReports(dir, report) {
  writeFileSync(path.join(dir, 'latest.json'), JSON.stringify(report, null, 2) + '\n');
  const md = [
    `# tkgate bench (${report.mode})`,
    '',
    `${report.date}; Node ${report.node}; ${report.cores} cores shared by the load generator, the gateways and the upstream; ${report.load_generator}, ${report.connections} connections; ${report.plan.rounds} interleaved rounds of ${report.plan.measureS} s per target (more where the disturbed column says so), each window after ${report.plan.rewarmS || report.plan.warmupS} s of the same load (${report.plan.warmupS} s in the first round), medians (req/s range = min-max of the rounds)${report.load_average ? `; load average ${report.load_average.join(', ')}` : ''}.`,
    '',
    `| ${HEADER.join(' | ')} |`,
    `|${HEADER.map(() => '---').join('|')}|`,
    ...tableRows(report).map((row) => `| ${row.join(' | ')} |`),
    '',
    ...goalLines(report).map((line) => `- ${line}`),
    '',
    ...notes(report),
    '',
  ].join('\n');
  writeFileSync(path.join(dir, 'latest.md'), md);
}

import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { withDatabase } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/** An async exec endpoint with the given schedules, written as a person would (one key a line). */
const toolkitText = (schedules: string, run = 'async') => `name: ops
type: app
endpoints:
  - path: backup
    method: POST
    type: exec
    command: ["/bin/true"]
    run: ${run}
    schedule:
${schedules}`;

// config check reads the database schema only: one dialect is enough.
describe(`tkgate config check on schedules (${dialects[0]!.name})`, () => {
  const s = withDatabase(dialects[0]!, []);
  const check = async (schedules: string, run?: string) => {
    const result = await runCli(['config', 'check', toolkitDir({ 'ops.yaml': toolkitText(schedules, run) }), '--config', writeConfig({ db: s.bed.dbConfig })]);
    return {
      code: result.code,
      lines: result.stdout
        .trim()
        .split('\n')
        .filter((line) => line.includes('ops.yaml:')),
    };
  };

  it('refuses a bad cron expression or zone at file:line:column, naming the key, the reason and the closest valid form', async () => {
    const { code, lines } = await check(
      [
        '      - name: nightly',
        '        cron: "30 2 * *"',
        '        timezone: Europe/Berln',
        '        as: backup-bot',
        '      - name: hourly',
        '        cron: "@hourley"',
        '        as: backup-bot',
        '      - name: minutes',
        '        cron: "61 * * * *"',
        '        as: backup-bot',
        '',
      ].join('\n'),
    );
    expect(code).to.not.equal(0);
    expect(lines.find((line) => line.includes('endpoints.0.schedule.0.cron'))).to.match(
      /ops\.yaml:11:15: .*endpoints\.0\.schedule\.0\.cron.*5 fields, or 6 with seconds first \(this has 4\).*30 2 \* \* \*/,
    );
    expect(lines.find((line) => line.includes('endpoints.0.schedule.0.timezone'))).to.match(
      /ops\.yaml:12:19: .*unknown time zone Europe\/Berln.*Europe\/Berlin/,
    );
    expect(lines.find((line) => line.includes('endpoints.0.schedule.1.cron'))).to.match(/ops\.yaml:15:15: .*@hourley.*did you mean @hourly\?/);
    expect(lines.find((line) => line.includes('endpoints.0.schedule.2.cron'))).to.match(/ops\.yaml:18:15: .*minute: 61/);
  });

  it('refuses a schedule on an endpoint that does not run as a job', async () => {
    const { code, lines } = await check(['      - name: nightly', '        cron: "30 2 * * *"', '        as: bot', ''].join('\n'), 'sync');
    expect(code).to.not.equal(0);
    expect(lines.join('\n')).to.match(/endpoints\.0\.schedule.*only for endpoints that run as jobs/);
  });
});

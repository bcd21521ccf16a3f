import { expect } from 'chai';
import { Cron } from 'croner';
import { coreModule } from '../../support/core-module.js';

const { FireTimes, cronProblem, zoneProblem, localTime, utcTime } =
  await coreModule<typeof import('../../../packages/core/dist/toolkits/schedule-times.js')>('toolkits/schedule-times.js');

/** The next fire times after `from`, each as UTC and local time. */
const fires = (cron: string, zone: string, from: string, n: number) =>
  new FireTimes(cron, zone).list(Date.parse(from), n).map((at) => `${utcTime(at)} ${localTime(zone, at)}`);

describe('schedule fire times (croner, with our daylight-saving rules)', () => {
  it('fires a local time that does not exist once, at the first instant after the gap (Europe/Berlin, 2027-03-28)', () => {
    expect(fires('30 2 * * *', 'Europe/Berlin', '2027-03-27T00:00:00Z', 3)).to.deep.equal([
      '2027-03-27T01:30:00Z 2027-03-27T02:30:00+01:00',
      '2027-03-28T01:00:00Z 2027-03-28T03:00:00+02:00',
      '2027-03-29T00:30:00Z 2027-03-29T02:30:00+02:00',
    ]);
    // Every time inside the gap becomes the gap's end, once; an hourly schedule fires at 03:00 once.
    expect(fires('*/20 2 * * *', 'Europe/Berlin', '2027-03-27T23:00:00Z', 2)).to.deep.equal([
      '2027-03-28T01:00:00Z 2027-03-28T03:00:00+02:00',
      '2027-03-29T00:00:00Z 2027-03-29T02:00:00+02:00',
    ]);
    expect(fires('0 * * * *', 'Europe/Berlin', '2027-03-28T00:00:00Z', 2)).to.deep.equal([
      '2027-03-28T01:00:00Z 2027-03-28T03:00:00+02:00',
      '2027-03-28T02:00:00Z 2027-03-28T04:00:00+02:00',
    ]);
  });

  it('differs from croner where croner moves a gap time by the gap (the reason for our correction)', () => {
    const croner = new Cron('30 2 * * *', { timezone: 'Europe/Berlin', paused: true }).nextRun(new Date('2027-03-28T00:00:00Z'));
    expect(croner?.toISOString()).to.equal('2027-03-28T01:30:00.000Z');
    const hourly = new Cron('0 * * * *', { timezone: 'Europe/Berlin', paused: true }).nextRuns(2, new Date('2027-03-28T00:00:00Z'));
    expect(hourly.map((at) => at.toISOString())).to.deep.equal(['2027-03-28T01:00:00.000Z', '2027-03-28T01:00:00.000Z']);
  });

  it('fires a local time that occurs twice once, at its first occurrence (Europe/Berlin, 2027-10-31)', () => {
    expect(fires('30 2 * * *', 'Europe/Berlin', '2027-10-30T00:00:00Z', 3)).to.deep.equal([
      '2027-10-30T00:30:00Z 2027-10-30T02:30:00+02:00',
      '2027-10-31T00:30:00Z 2027-10-31T02:30:00+02:00',
      '2027-11-01T01:30:00Z 2027-11-01T02:30:00+01:00',
    ]);
    expect(fires('0,30 * * * *', 'Europe/Berlin', '2027-10-30T23:45:00Z', 4)).to.deep.equal([
      '2027-10-31T00:00:00Z 2027-10-31T02:00:00+02:00',
      '2027-10-31T00:30:00Z 2027-10-31T02:30:00+02:00',
      '2027-10-31T02:00:00Z 2027-10-31T03:00:00+01:00',
      '2027-10-31T02:30:00Z 2027-10-31T03:30:00+01:00',
    ]);
  });

  it('keeps half-hour zones and their own changes (Asia/Kolkata, Australia/Adelaide)', () => {
    expect(fires('30 2 * * *', 'Asia/Kolkata', '2027-03-27T00:00:00Z', 2)).to.deep.equal([
      '2027-03-27T21:00:00Z 2027-03-28T02:30:00+05:30',
      '2027-03-28T21:00:00Z 2027-03-29T02:30:00+05:30',
    ]);
    // Adelaide falls back on 2027-04-04 (02:30 twice: the first) and springs forward on 2027-10-03 (02:30 missing: 03:00).
    expect(fires('30 2 * * *', 'Australia/Adelaide', '2027-04-03T00:00:00Z', 2)).to.deep.equal([
      '2027-04-03T16:00:00Z 2027-04-04T02:30:00+10:30',
      '2027-04-04T17:00:00Z 2027-04-05T02:30:00+09:30',
    ]);
    expect(fires('30 2 * * *', 'Australia/Adelaide', '2027-10-02T00:00:00Z', 2)).to.deep.equal([
      '2027-10-02T16:30:00Z 2027-10-03T03:00:00+10:30',
      '2027-10-03T16:00:00Z 2027-10-04T02:30:00+10:30',
    ]);
  });

  it('takes 6 fields with seconds first and the @ forms, strictly after the instant given', () => {
    expect(fires('*/2 * * * * *', 'UTC', '2027-01-01T00:00:02Z', 2)).to.deep.equal([
      '2027-01-01T00:00:04Z 2027-01-01T00:00:04+00:00',
      '2027-01-01T00:00:06Z 2027-01-01T00:00:06+00:00',
    ]);
    expect(fires('@weekly', 'UTC', '2027-03-27T00:00:00Z', 1)).to.deep.equal(['2027-03-28T00:00:00Z 2027-03-28T00:00:00+00:00']);
    expect(fires('@hourly', 'Asia/Kolkata', '2027-03-27T00:10:00Z', 1)).to.deep.equal(['2027-03-27T00:30:00Z 2027-03-27T06:00:00+05:30']);
  });

  it('refuses bad expressions and zones with the reason and the closest valid form', () => {
    expect(cronProblem('30 2 * * *')).to.equal(undefined);
    expect(cronProblem('*/5 * * * * *')).to.equal(undefined);
    expect(cronProblem('@daily')).to.equal(undefined);
    expect(cronProblem('30 2 * *')).to.deep.equal({
      message: 'a cron expression has 5 fields, or 6 with seconds first (this has 4)',
      hint: 'did you mean "30 2 * * *"?',
    });
    expect(cronProblem('0 0 0 1 1 * 2027')?.message).to.match(/this has 7/);
    expect(cronProblem('61 * * * *')?.message).to.match(/minute/);
    expect(cronProblem('@dialy')).to.deep.include({ hint: 'did you mean @daily?' });
    expect(zoneProblem('Europe/Berlin')).to.equal(undefined);
    expect(zoneProblem('Europe/Berln')).to.deep.equal({
      message: 'unknown time zone Europe/Berln (an IANA name such as Europe/Berlin)',
      hint: 'did you mean Europe/Berlin?',
    });
  });
});

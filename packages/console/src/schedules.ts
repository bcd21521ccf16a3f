/**
 * Schedules (docs/schedules.md): the schedules the caller may see, with the next fire, the last outcome, pause and
 * resume; #/schedules/ID shows one schedule's fires, newest first, with their runs.
 */
import { call, problem } from './api.js';
import { alert, formatTime, h, replace, status } from './dom.js';
import type { PageContext } from './main.js';

interface Schedule {
  id: string;
  toolkit: string;
  endpoint: string;
  cron: string;
  timezone: string;
  as: string;
  next_fire_at: string | null;
  last_fire: { fire_at: string; outcome: string; run_id: string | null } | null;
  paused: boolean;
}

interface Fire {
  fire_at: string;
  outcome: string;
  run_id: string | null;
  reason: string | null;
}

const segment = (id: string) => encodeURIComponent(id);
const runLink = (runId: string | null) => (runId ? h('a', { href: `#/runs/${encodeURIComponent(runId)}` }, runId) : '—');

export async function schedulesPage({ main }: PageContext): Promise<void> {
  const list = h('div', { 'aria-live': 'polite' });
  replace(main, h('h1', {}, 'Schedules'), list);
  const reply = await call('GET', '/schedules');
  if (reply.status !== 200) return replace(list, alert(problem(reply)));
  const schedules = reply.json!.data.schedules as Schedule[];
  if (schedules.length === 0) return replace(list, h('p', {}, 'No schedule you may see.'));
  const note = status();
  const rows = schedules.map((schedule) => row(schedule, note));
  replace(
    list,
    h(
      'table',
      {},
      h('caption', {}, `${schedules.length} schedules`),
      h('thead', {}, h('tr', {}, ...['Schedule', 'Cron', 'Next fire', 'Last fire', 'State', ''].map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, ...rows),
    ),
    note,
  );
}

function row(schedule: Schedule, note: HTMLElement): HTMLTableRowElement {
  const state = h('td', { class: 'state' }, schedule.paused ? 'paused' : 'active');
  const toggle = h('button', { type: 'button' }, schedule.paused ? 'Resume' : 'Pause');
  let paused = schedule.paused;
  toggle.addEventListener('click', async () => {
    toggle.disabled = true;
    const reply = await call('POST', `/schedules/${segment(schedule.id)}/${paused ? 'resume' : 'pause'}`);
    toggle.disabled = false;
    if (reply.status !== 200) {
      note.textContent = `${schedule.id}: ${problem(reply)}`;
      return;
    }
    paused = Boolean(reply.json!.data.paused);
    state.textContent = paused ? 'paused' : 'active';
    toggle.textContent = paused ? 'Resume' : 'Pause';
    note.textContent = `${schedule.id} ${paused ? 'paused' : 'resumed'}.`;
  });
  const last = schedule.last_fire;
  return h(
    'tr',
    { 'data-schedule': schedule.id },
    h('td', {}, h('a', { href: `#/schedules/${segment(schedule.id)}` }, schedule.id)),
    h('td', {}, h('code', {}, schedule.cron), ` ${schedule.timezone}`),
    h('td', {}, formatTime(schedule.next_fire_at)),
    h('td', { class: 'last' }, last ? [formatTime(last.fire_at), last.outcome].join(' · ') : '—'),
    state,
    h('td', {}, toggle),
  );
}

export async function schedulePage({ main }: PageContext, id: string): Promise<void> {
  const results = h('div', { 'aria-live': 'polite' });
  const newer = h('button', { type: 'button', disabled: true }, 'Newer');
  const older = h('button', { type: 'button', disabled: true }, 'Older');
  const pages: Array<string | null> = [null];
  let next: string | null = null;
  const load = async () => {
    const query = new URLSearchParams({ limit: '50' });
    const cursor = pages[pages.length - 1];
    if (cursor) query.set('cursor', cursor);
    const reply = await call('GET', `/schedules/${segment(id)}/fires?${query}`);
    if (reply.status !== 200) return replace(results, alert(problem(reply)));
    const fires = reply.json!.data.fires as Fire[];
    next = reply.json!.data.next_cursor;
    older.disabled = !next;
    newer.disabled = pages.length <= 1;
    replace(
      results,
      h(
        'table',
        {},
        h('caption', {}, `${fires.length} fires, page ${pages.length}, newest first`),
        h('thead', {}, h('tr', {}, ...['Fire time', 'Outcome', 'Run', 'Reason'].map((title) => h('th', { scope: 'col' }, title)))),
        h(
          'tbody',
          {},
          ...fires.map((fire) =>
            h(
              'tr',
              {},
              h('td', {}, formatTime(fire.fire_at)),
              h('td', { class: 'outcome' }, fire.outcome),
              h('td', {}, runLink(fire.run_id)),
              h('td', {}, fire.reason ?? ''),
            ),
          ),
        ),
      ),
    );
  };
  older.addEventListener('click', () => (pages.push(next), void load()));
  newer.addEventListener('click', () => (pages.pop(), void load()));
  replace(main, h('p', {}, h('a', { href: '#/schedules' }, '← Schedules')), h('h1', {}, id), results, h('div', { class: 'actions' }, newer, older));
  await load();
}

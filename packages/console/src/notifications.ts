/** Notifications (callers with auth.admin_power): the delivery log with each delivery's attempts, and redeliver. */
import { call, problem } from './api.js';
import { filterForm, formatTime, h, replace, status } from './dom.js';
import { pagedLog } from './paged-log.js';
import type { PageContext } from './main.js';

interface Attempt {
  at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

interface Delivery {
  id: string;
  event: string;
  sink: string;
  status: 'pending' | 'delivered' | 'failed';
  webhook_id: string;
  run_id: string | null;
  created_at: string;
  next_at: string | null;
  attempts: Attempt[];
}

/** One attempt in words: its status code or error, and how long it took. */
const attemptText = (attempt: Attempt): string =>
  `${formatTime(attempt.at)}: ${[attempt.status_code ?? null, attempt.error].filter((part) => part !== null).join(' ') || '—'} (${attempt.duration_ms} ms)`;

export async function notificationsPage({ main }: PageContext): Promise<void> {
  const inputs = {
    status: h('select', { name: 'status' }, ...['', 'pending', 'delivered', 'failed'].map((value) => h('option', { value }, value || 'any'))),
    sink: h('input', { name: 'sink' }),
    event: h('input', { name: 'event', placeholder: 'run.failed, run.awaiting_approval…' }),
  };
  const results = h('div', { 'aria-live': 'polite' });
  const note = status();
  const newer = h('button', { type: 'button', disabled: true }, 'Newer');
  const older = h('button', { type: 'button', disabled: true }, 'Older');
  const redeliver = async (delivery: Delivery) => {
    const reply = await call('POST', `/admin/notifications/${encodeURIComponent(delivery.id)}/redeliver`);
    note.textContent = reply.status === 202 ? `Delivery ${delivery.id} will be sent again (the same webhook-id).` : problem(reply);
    await load();
  };
  const row = (delivery: Delivery) =>
    h(
      'tr',
      {},
      h('td', {}, formatTime(delivery.created_at)),
      h('td', {}, delivery.event),
      h('td', {}, delivery.run_id ? h('a', { href: `#/runs/${encodeURIComponent(delivery.run_id)}` }, delivery.run_id.slice(0, 8)) : '—'),
      h('td', {}, delivery.sink),
      h('td', { class: `state ${delivery.status}` }, delivery.status, delivery.next_at ? ` (next ${formatTime(delivery.next_at)})` : ''),
      h(
        'td',
        {},
        delivery.attempts.length === 0
          ? 'none yet'
          : h(
              'details',
              {},
              h('summary', {}, `${delivery.attempts.length} attempt(s)`),
              h('ol', {}, ...delivery.attempts.map((attempt) => h('li', {}, attemptText(attempt)))),
            ),
      ),
      h('td', {}, h('button', { type: 'button', 'aria-label': `Redeliver ${delivery.id}`, onclick: () => void redeliver(delivery) }, 'Redeliver')),
    );
  const render = (deliveries: Delivery[], page: number) =>
    h(
      'table',
      {},
      h('caption', {}, `${deliveries.length} deliveries, page ${page}, newest first`),
      h('thead', {}, h('tr', {}, ...['Event at', 'Event', 'Run', 'Sink', 'Status', 'Attempts', 'Action'].map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, ...deliveries.map(row)),
    );
  const { load, filter } = pagedLog({ path: '/admin/notifications', inputs, entries: 'deliveries', render }, older, newer, results);
  const form = filterForm(
    'Filter the delivery log',
    [
      ['Status', inputs.status],
      ['Sink', inputs.sink],
      ['Event', inputs.event],
    ],
    () => void filter(),
  );
  replace(main, h('h1', {}, 'Notifications'), form, note, results, h('div', { class: 'actions' }, newer, older));
  await load();
}

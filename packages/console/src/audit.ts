/** Audit (callers with auth.admin_power): the trail filtered by user, action, toolkit and time; paging. */
import { filterForm, formatTime, h, replace } from './dom.js';
import { pagedLog } from './paged-log.js';
import type { PageContext } from './main.js';

interface AuditEvent {
  id: string;
  at: string;
  username: string | null;
  actor: string | null;
  action: string;
  toolkit: string | null;
  endpoint: string | null;
  method: string | null;
  status: number | null;
  code: string | null;
  client: string | null;
}

export async function auditPage({ main }: PageContext): Promise<void> {
  const inputs = {
    user: h('input', { name: 'user' }),
    action: h('input', { name: 'action', placeholder: 'call, login, run_approve…' }),
    toolkit: h('input', { name: 'toolkit' }),
    since: h('input', { name: 'since', placeholder: '1h, 7d or 2026-11-01' }),
    until: h('input', { name: 'until', placeholder: 'empty: now' }),
  };
  const results = h('div', { 'aria-live': 'polite' });
  const newer = h('button', { type: 'button', disabled: true }, 'Newer');
  const older = h('button', { type: 'button', disabled: true }, 'Older');
  const render = (events: AuditEvent[], page: number) =>
    h(
      'table',
      {},
      h('caption', {}, `${events.length} events, page ${page}, newest first`),
      h('thead', {}, h('tr', {}, ...['At', 'User', 'Action', 'Toolkit', 'Endpoint', 'Status', 'Client'].map((title) => h('th', { scope: 'col' }, title)))),
      h(
        'tbody',
        {},
        ...events.map((event) =>
          h(
            'tr',
            {},
            h('td', {}, formatTime(event.at)),
            h('td', {}, event.username ?? event.actor ?? '—'),
            h('td', {}, event.action),
            h('td', {}, event.toolkit ?? ''),
            h('td', {}, [event.method, event.endpoint].filter(Boolean).join(' ')),
            h('td', {}, [event.status, event.code].filter((part) => part !== null && part !== undefined).join(' ')),
            h('td', {}, event.client ?? ''),
          ),
        ),
      ),
    );
  const { load, filter } = pagedLog({ path: '/admin/audit', inputs, entries: 'events', render }, older, newer, results);
  const form = filterForm(
    'Filter the audit trail',
    [
      ['User', inputs.user],
      ['Action', inputs.action],
      ['Toolkit', inputs.toolkit],
      ['Since', inputs.since],
      ['Until', inputs.until],
    ],
    () => void filter(),
  );
  replace(main, h('h1', {}, 'Audit'), form, results, h('div', { class: 'actions' }, newer, older));
  await load();
}

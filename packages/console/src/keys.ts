/** API keys: the caller's keys; create one (shown once, with a copy button) and revoke. */
import { call, problem } from './api.js';
import { alert, formatTime, h, labelled, replace, status } from './dom.js';
import type { PageContext } from './main.js';

interface Key {
  id: string;
  name: string;
  scope: string[] | null;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export async function keysPage({ main }: PageContext): Promise<void> {
  const name = h('input', { name: 'name', required: true, maxlength: 64 });
  const toolkits = h('input', { name: 'toolkits', placeholder: 'reports, ops' });
  const expires = h('input', { name: 'expires_in', placeholder: '90d' });
  const created = h('div', { 'aria-live': 'polite' });
  const list = h('div', {});
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'new-key' },
    h('h2', { id: 'new-key' }, 'Create a key'),
    labelled('Name (required)', name),
    labelled('Toolkits', toolkits, 'comma-separated; empty: every toolkit you may call'),
    labelled('Expires in', expires, 'a duration such as 30m, 12h or 90d; empty: never'),
    h('button', { type: 'submit' }, 'Create key'),
    created,
  );
  const load = async () => {
    const reply = await call('GET', '/auth/api-keys');
    if (reply.status !== 200) return replace(list, alert(problem(reply)));
    const keys = reply.json!.data.keys as Key[];
    replace(
      list,
      keys.length === 0
        ? h('p', {}, 'No keys yet.')
        : h(
            'table',
            {},
            h('caption', {}, 'Your keys'),
            h('thead', {}, h('tr', {}, ...['Name', 'Id', 'Toolkits', 'Created', 'Expires', 'Last used', ''].map((title) => h('th', { scope: 'col' }, title)))),
            h('tbody', {}, ...keys.map((key) => row(key, load))),
          ),
    );
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body: Record<string, unknown> = { name: name.value };
    const scope = toolkits.value.split(/[\s,]+/).filter(Boolean);
    if (scope.length > 0) body.toolkits = scope;
    if (expires.value.trim()) body.expires_in = expires.value.trim();
    const reply = await call('POST', '/auth/api-keys', { body });
    if (reply.status !== 201) {
      const details = (reply.json?.error?.details as Array<{ field: string; message: string }> | undefined) ?? [];
      return replace(created, alert([problem(reply), ...details.map((each) => `${each.field}: ${each.message}`)].join(' · ')));
    }
    const key = reply.json!.data.key as string;
    const value = h('input', { readonly: true, value: key, id: 'new-key-value', size: 50 });
    const copied = status();
    const copy = h('button', { type: 'button' }, 'Copy');
    copy.addEventListener('click', async () => {
      value.select();
      try {
        await navigator.clipboard.writeText(key);
        copied.textContent = 'Copied.';
      } catch {
        copied.textContent = 'Select the key and copy it (Ctrl+C).';
      }
    });
    replace(created, h('p', {}, 'Store this key now: it is shown only once.'), labelled('New key', value), copy, copied);
    form.reset();
    await load();
  });
  replace(main, h('h1', {}, 'API keys'), form, list);
  await load();
}

function row(key: Key, reload: () => Promise<void>): HTMLTableRowElement {
  const revoke = h('button', { type: 'button', 'aria-label': `Revoke ${key.name}` }, 'Revoke');
  revoke.addEventListener('click', async () => {
    if (!confirm(`Revoke the key ${key.name}? Jobs using it stop working.`)) return;
    await call('DELETE', `/auth/api-keys/${encodeURIComponent(key.id)}`);
    await reload();
  });
  return h(
    'tr',
    {},
    h('td', {}, key.name),
    h('td', {}, h('code', {}, key.id)),
    h('td', {}, key.scope?.length ? key.scope.join(', ') : 'all'),
    h('td', {}, formatTime(key.created_at)),
    h('td', {}, key.expires_at ? formatTime(key.expires_at) : 'never'),
    h('td', {}, formatTime(key.last_used_at)),
    h('td', {}, key.revoked_at ? `revoked ${formatTime(key.revoked_at)}` : revoke),
  );
}

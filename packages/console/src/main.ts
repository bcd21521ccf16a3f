/**
 * The console's shell: sign-in (password or an OIDC provider), the navigation, and a page per hash route
 * (#/endpoints, #/runs, #/runs/ID, #/approvals, #/schedules, #/schedules/ID, #/keys, #/audit, #/notifications). docs/console.md describes each page.
 */
import { base, call, clearToken, description, forgetDescription, problem, setToken, token, whenUnauthorized } from './api.js';
import { alert, formatTime, h, labelled, replace, status } from './dom.js';
import { endpointsPage } from './endpoints.js';
import { runPage, runsPage } from './runs.js';
import { approvalsPage } from './approvals.js';
import { keysPage } from './keys.js';
import { auditPage } from './audit.js';
import { schedulePage, schedulesPage } from './schedules.js';
import { notificationsPage } from './notifications.js';

export interface Me {
  user: { id: number; username: string; power: number };
  expires_at: string;
  provider?: string;
}

/** What a page is given: where to draw, who is signed in, and a signal aborted when the page is left. */
export interface PageContext {
  main: HTMLElement;
  me: Me;
  admin: boolean;
  signal: AbortSignal;
}

const root = document.getElementById('app')!;
let leave = new AbortController();

const PAGES: Array<{ hash: string; title: string; admin?: boolean }> = [
  { hash: '#/endpoints', title: 'Endpoints' },
  { hash: '#/runs', title: 'Runs' },
  { hash: '#/approvals', title: 'Approvals' },
  { hash: '#/schedules', title: 'Schedules' },
  { hash: '#/keys', title: 'API keys' },
  { hash: '#/audit', title: 'Audit', admin: true },
  { hash: '#/notifications', title: 'Notifications', admin: true },
];

function signIn(message?: string): void {
  leave.abort();
  leave = new AbortController();
  document.title = 'Sign in · tkgate';
  const username = h('input', { name: 'username', autocomplete: 'username', required: true });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const note = status();
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Sign in to tkgate'),
    message ? alert(message) : null,
    labelled('Username', username),
    labelled('Password', password),
    h('button', { type: 'submit' }, 'Sign in'),
    note,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    note.textContent = 'Signing in…';
    const reply = await call('POST', '/auth/login', { body: { username: username.value, password: password.value } });
    if (reply.status === 200 && reply.json?.data?.token) {
      setToken(reply.json.data.token);
      location.hash = '#/endpoints';
      void show();
    } else note.textContent = reply.status === 401 ? 'Wrong username or password.' : problem(reply);
  });
  const providers = h('div', { class: 'providers' });
  replace(root, h('main', { id: 'main', class: 'sign-in' }, form, providers));
  void fetch(`${base}/console/config.json`, { cache: 'no-store' })
    .then((response) => response.json())
    .then((settings: { providers: Array<{ name: string }> }) => {
      if (settings.providers.length === 0) return;
      const returnTo = `${location.origin}${base}/console/`;
      replace(
        providers,
        h('h2', {}, 'Or sign in with'),
        ...settings.providers.map((provider) =>
          h(
            'a',
            { class: 'button', href: `${base}/auth/oidc/${encodeURIComponent(provider.name)}/login?return_to=${encodeURIComponent(returnTo)}` },
            provider.name,
          ),
        ),
      );
    })
    .catch(() => undefined);
  username.focus();
}

/**
 * Back from a provider: `#login_code=…` (or `#error=…`) is read, dropped from the address bar, and exchanged. The
 * exchange is same-origin, so it carries the gateway's cookie that binds the code to this browser (docs/sso.md): a
 * code from another browser's sign-in (a link someone sent) is refused and signs nobody in.
 */
async function finishOidc(): Promise<string | undefined> {
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (!fragment.has('login_code') && !fragment.has('error')) return undefined;
  history.replaceState(null, '', location.pathname);
  if (fragment.has('error')) return `Sign-in refused: ${fragment.get('error')}`;
  const reply = await call('POST', '/auth/oidc/exchange', { body: { login_code: fragment.get('login_code') } }).catch(() => undefined);
  if (!reply) return 'Sign-in failed: the gateway could not be reached. Sign in again.';
  if (reply.status !== 200)
    return reply.json?.error?.code === 'invalid_login_code'
      ? 'Sign-in failed: this sign-in was not started in this browser, or took too long. Sign in again.'
      : `Sign-in failed: ${problem(reply)}`;
  setToken(reply.json!.data.token);
  location.hash = '#/endpoints';
  return undefined;
}

let me: Me | undefined;

async function show(): Promise<void> {
  if (!token()) return signIn();
  if (!me) {
    const reply = await call('GET', '/auth/status');
    if (reply.status !== 200) return signIn(reply.status === 401 ? undefined : problem(reply));
    me = reply.json!.data as Me;
  }
  leave.abort();
  leave = new AbortController();
  const admin = await isAdmin();
  const hash = location.hash || '#/endpoints';
  const page = PAGES.find((each) => hash === each.hash || hash.startsWith(`${each.hash}/`)) ?? PAGES[0]!;
  const main = h('main', { id: 'main', tabindex: '-1' });
  const signOut = h('button', { type: 'button', class: 'link' }, 'Sign out');
  signOut.addEventListener('click', async () => {
    const reply = await call('POST', '/auth/logout');
    forget();
    const endSession = reply.json?.data?.end_session_url;
    if (typeof endSession === 'string' && /^https?:/.test(endSession)) location.assign(endSession);
    else signIn('Signed out.');
  });
  replace(
    root,
    h('a', { class: 'skip', href: '#main', onclick: (event: Event) => (event.preventDefault(), main.focus()) }, 'Skip to content'),
    h(
      'header',
      {},
      h('span', { class: 'brand' }, 'tkgate'),
      h(
        'nav',
        { 'aria-label': 'Pages' },
        h(
          'ul',
          {},
          ...PAGES.filter((each) => !each.admin || admin).map((each) =>
            h('li', {}, h('a', { href: each.hash, 'aria-current': each === page ? 'page' : null }, each.title)),
          ),
        ),
      ),
      h(
        'p',
        { class: 'who' },
        h('span', { id: 'who' }, `${me.user.username} (power ${me.user.power})`),
        ' · session ends ',
        h('time', { id: 'expires', datetime: me.expires_at }, formatTime(me.expires_at)),
        ' ',
        signOut,
      ),
    ),
    main,
  );
  document.title = `${page.title} · tkgate`;
  const context: PageContext = { main, me, admin, signal: leave.signal };
  if (page.hash === '#/runs' && hash.startsWith('#/runs/')) return runPage(context, decodeURIComponent(hash.slice('#/runs/'.length)));
  if (page.hash === '#/endpoints') return endpointsPage(context);
  if (page.hash === '#/runs') return runsPage(context);
  if (page.hash === '#/approvals') return approvalsPage(context);
  if (page.hash === '#/schedules' && hash.startsWith('#/schedules/')) return schedulePage(context, decodeURIComponent(hash.slice('#/schedules/'.length)));
  if (page.hash === '#/schedules') return schedulesPage(context);
  if (page.hash === '#/keys') return keysPage(context);
  if (page.hash === '#/notifications') return notificationsPage(context);
  return auditPage(context);
}

/** Whether the caller has auth.admin_power: openapi.json holds the admin routes for those callers only. */
const isAdmin = async (): Promise<boolean> => Boolean((await description())?.paths?.['/admin/audit']);

/** Forgets the signed-in user (sign-out, or a 401 anywhere). */
function forget(): void {
  clearToken();
  me = undefined;
  forgetDescription();
}

whenUnauthorized(() => {
  forget();
  signIn('Your session has ended: sign in again.');
});
window.addEventListener('hashchange', () => {
  if (token() && !location.hash.startsWith('#login_code')) void show();
});
void finishOidc().then((message) => (message ? signIn(message) : show()));

/** Runs: the caller's runs and those they may see, filterable; a run's page with its live output (SSE). */
import { authHeaders, base, call, problem, signedOut } from './api.js';
import { alert, duration, filterForm, formatTime, h, replace, status } from './dom.js';
import type { PageContext } from './main.js';
import { fleetSection } from './fleet.js';
import { followEvents, stripAnsi } from './sse.js';

export interface Run {
  id: string;
  toolkit: string;
  endpoint: string;
  status: string;
  actor: { username: string | null; kind: string };
  queued_at: string;
  started_at: string | null;
  ended_at: string | null;
  exit_code: number | null;
  signal: string | null;
  reason: string | null;
  payload: unknown;
  result?: unknown;
  approvals?: Array<{ username: string; decision: string; comment: string | null; at: string }>;
  /** Who decides a run of an endpoint with an approval, how many must, and until when. */
  approval?: { approvers: { min_power: number | null; group: string | null }; quorum: number; allow_self: boolean; expires_at: string | null } | null;
  dry_run?: { status: string; exit_code: number | null; output: string } | null;
  /** A fleet run's (docs/fleet.md): how many nodes, their counts by status, the run it reruns. */
  node_count?: number;
  node_counts?: Record<string, number>;
  rerun_of?: string | null;
}

/** How many approvals a run has of how many it needs: "1 of 2 approvals". */
export function quorumOf(run: Run): string {
  const quorum = run.approval?.quorum ?? 1;
  const approved = (run.approvals ?? []).filter((each) => each.decision === 'approve').length;
  return `${approved} of ${quorum} approval${quorum === 1 ? '' : 's'}`;
}

/** A run's approval as lines of facts: who may approve, how many have of how many needed, until when. */
export function approvalFacts(run: Run): Array<[string, string]> {
  const approval = run.approval;
  if (!approval) return [];
  const who = [
    approval.approvers.min_power !== null ? `power ${approval.approvers.min_power} or more` : '',
    approval.approvers.group !== null ? `core group ${approval.approvers.group}` : '',
  ].filter(Boolean);
  const decisions = (run.approvals ?? []).map(
    (each) => `${each.username} ${each.decision === 'approve' ? 'approved' : 'rejected'}${each.comment ? `: ${each.comment}` : ''}`,
  );
  return [
    ['Approvers', `${who.join(', in ') || 'anyone'}${approval.allow_self ? '' : ' (not the caller)'}`],
    ['Quorum', quorumOf(run)],
    ['Approval expires', formatTime(approval.expires_at)],
    ['Decisions', decisions.length > 0 ? decisions.join('; ') : 'none yet'],
  ];
}

const STATUSES = ['', 'awaiting_approval', 'queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'lost', 'rejected', 'expired'];
const ENDED = new Set(['succeeded', 'failed', 'timed_out', 'cancelled', 'lost', 'rejected', 'expired']);

/** A table of runs, each linking to its page. */
export function runTable(runs: readonly Run[], caption: string): HTMLTableElement {
  return h(
    'table',
    {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...['Run', 'Toolkit', 'Endpoint', 'Status', 'By', 'Queued', 'Duration'].map((name) => h('th', { scope: 'col' }, name)))),
    h(
      'tbody',
      {},
      ...runs.map((run) =>
        h(
          'tr',
          {},
          h('td', {}, h('a', { href: `#/runs/${encodeURIComponent(run.id)}` }, run.id.slice(0, 12))),
          h('td', {}, run.toolkit),
          h('td', {}, run.endpoint),
          h('td', {}, h('span', { class: `badge ${run.status}` }, run.status)),
          h('td', {}, run.actor.username ?? run.actor.kind),
          h('td', {}, formatTime(run.queued_at)),
          h('td', {}, duration(run.started_at, run.ended_at)),
        ),
      ),
    ),
  );
}

export async function runsPage({ main }: PageContext): Promise<void> {
  const toolkit = h('input', { name: 'toolkit' });
  const endpoint = h('input', { name: 'endpoint' });
  const user = h('input', { name: 'user' });
  const state = h('select', { name: 'status' }, ...STATUSES.map((value) => h('option', { value }, value || 'any')));
  const results = h('div', {});
  const more = h('button', { type: 'button', hidden: true }, 'Older runs');
  let cursor: string | null = null;
  let shown: Run[] = [];
  const load = async (reset: boolean) => {
    const query = new URLSearchParams();
    for (const [name, input] of [
      ['toolkit', toolkit],
      ['endpoint', endpoint],
      ['user', user],
      ['status', state],
    ] as const)
      if (input.value) query.set(name, input.value);
    query.set('limit', '50');
    if (!reset && cursor) query.set('cursor', cursor);
    const reply = await call('GET', `/runs?${query}`);
    if (reply.status !== 200) return replace(results, alert(problem(reply)));
    shown = reset ? reply.json!.data.runs : [...shown, ...reply.json!.data.runs];
    cursor = reply.json!.data.next_cursor;
    more.hidden = !cursor;
    replace(results, shown.length === 0 ? h('p', {}, 'No runs.') : runTable(shown, `${shown.length} runs, newest first`));
  };
  const filters = filterForm(
    'Filter runs',
    [
      ['Toolkit', toolkit],
      ['Endpoint', endpoint],
      ['User', user],
      ['Status', state],
    ],
    () => void load(true),
  );
  more.addEventListener('click', () => void load(false));
  replace(main, h('h1', {}, 'Runs'), filters, results, more);
  await load(true);
}

export async function runPage({ main, signal }: PageContext, id: string): Promise<void> {
  const reply = await call('GET', `/runs/${encodeURIComponent(id)}`);
  if (reply.status !== 200) return replace(main, h('h1', {}, 'Run'), alert(problem(reply)));
  let run = reply.json!.data as Run;
  const facts = h('dl', { class: 'facts' });
  const output = h('pre', { class: 'output', id: 'output', tabindex: '0', 'aria-label': 'output', 'aria-live': 'off' });
  const note = status();
  const cancel = h('button', { type: 'button', id: 'cancel' }, 'Cancel run');
  const drawFacts = () => {
    replace(
      facts,
      ...(
        [
          ['Status', h('span', { class: `badge ${run.status}`, id: 'run-status' }, run.status)],
          ['Endpoint', `${run.toolkit} ${run.endpoint}`],
          ['By', run.actor.username ?? run.actor.kind],
          ['Queued', formatTime(run.queued_at)],
          ['Started', formatTime(run.started_at)],
          ['Ended', formatTime(run.ended_at)],
          ['Duration', duration(run.started_at, run.ended_at)],
          ['Exit code', run.exit_code === null ? '—' : String(run.exit_code)],
          ...(run.signal ? ([['Signal', run.signal]] as const) : []),
          ['Reason', run.reason ?? '—'],
          ...approvalFacts(run),
          ...(run.node_count !== undefined ? ([['Nodes', String(run.node_count)]] as const) : []),
          ...(run.rerun_of ? ([['Rerun of', h('a', { href: `#/runs/${encodeURIComponent(run.rerun_of)}` }, run.rerun_of.slice(0, 12))]] as const) : []),
        ] as ReadonlyArray<readonly [string, string | HTMLElement]>
      ).flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]),
    );
    const ended = ENDED.has(run.status);
    cancel.hidden = ended;
    // A cancel asked for, and the run has ended since: say how it ended rather than "Cancelling…".
    if (ended && cancelling) {
      cancelling = false;
      note.textContent = `The run ended: ${run.status}.`;
    }
  };
  let cancelling = false;
  const refresh = async () => {
    const again = await call('GET', `/runs/${encodeURIComponent(id)}`);
    if (again.status === 200) run = again.json!.data;
    drawFacts();
  };
  cancel.addEventListener('click', async () => {
    if (!confirm(`Cancel run ${run.id} (${run.toolkit} ${run.endpoint})? The command is stopped.`)) return;
    cancel.disabled = true;
    const answer = await call('POST', `/runs/${encodeURIComponent(id)}/cancel`);
    cancel.disabled = false;
    cancelling = answer.status === 202;
    note.textContent = cancelling ? 'Cancelling…' : problem(answer);
    await refresh();
  });
  drawFacts();
  // A fleet run shows its nodes, paged by the server, and one node's output at a time rather than every line.
  const fleet = run.node_count !== undefined ? fleetSection(id, signal) : undefined;
  replace(
    main,
    h('h1', {}, `Run ${run.id}`),
    facts,
    cancel,
    note,
    h('h2', {}, 'Payload'),
    h('pre', { class: 'json', tabindex: '0', 'aria-label': 'payload' }, JSON.stringify(run.payload, null, 2)),
    ...(fleet ? fleet.elements : [h('h2', {}, 'Output'), output]),
  );
  let ended = false;
  // Each second the duration moves on; while a cancel is under way the run is read again, in case its end is missed.
  const ticker = setInterval(() => (cancelling ? void refresh() : !ended && drawFacts()), 1000);
  signal.addEventListener('abort', () => clearInterval(ticker));
  await followEvents({
    url: `${base}/runs/${encodeURIComponent(id)}/output`,
    headers: authHeaders(),
    signal,
    ended: () => ended,
    onRefused: (response) => (response.status === 401 ? signedOut() : void (note.textContent = `output: ${response.status}`)),
    onEvent: (event) => {
      if (event.event === 'end') {
        ended = true;
        void refresh();
        fleet?.changed();
        return;
      }
      if (fleet) {
        // The run-wide stream only says when to read the counts and the page again.
        if (event.event === 'node') fleet.changed();
        if (run.status === 'queued' || run.status === 'awaiting_approval') void refresh();
        return;
      }
      if (event.event !== 'stdout' && event.event !== 'stderr') return;
      // Text only: a text node, never markup; colour codes are stripped.
      const chunk = h('span', { class: event.event }, stripAnsi(event.data.endsWith('\n') ? event.data : `${event.data}\n`));
      output.append(chunk);
      if (run.status === 'queued' || run.status === 'awaiting_approval') void refresh();
    },
  });
  clearInterval(ticker);
}

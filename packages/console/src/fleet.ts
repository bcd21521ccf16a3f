/**
 * A fleet run's part of its page (docs/fleet.md): the node counts, a table of its nodes paged by the server (a page
 * at a time, filtered by status: usable at 10,000 nodes), and one node's output at a time, followed live.
 */
import { authHeaders, base, call, problem, signedOut } from './api.js';
import { alert, formatTime, h, labelled, replace } from './dom.js';
import { followEvents, stripAnsi } from './sse.js';

export interface RunNode {
  name: string;
  status: string;
  exit_code: number | null;
  signal: string | null;
  reason: string | null;
  started_at: string | null;
  ended_at: string | null;
  output_bytes: number;
  output_truncated: boolean;
}

export const NODE_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'skipped'];
const PAGE = 50;

/** The counts as one line of badges: "6 succeeded · 2 failed"; statuses with no node are left out. */
export function countsLine(counts: Record<string, number> | undefined): string {
  return NODE_STATUSES.filter((name) => (counts?.[name] ?? 0) > 0)
    .map((name) => `${counts![name]} ${name}`)
    .join(' · ');
}

export interface FleetSection {
  elements: HTMLElement[];
  /** The run changed (a node event, its end): counts and the page shown are read again, at most once a second. */
  changed(): void;
}

/** The section for run `id`; followers stop when `signal` aborts. */
export function fleetSection(id: string, signal: AbortSignal): FleetSection {
  const runPath = `/runs/${encodeURIComponent(id)}`;
  const counts = h('p', { id: 'node-counts', 'aria-live': 'polite' });
  const filter = h(
    'select',
    { name: 'node-status', id: 'node-status' },
    h('option', { value: '' }, 'any'),
    ...NODE_STATUSES.map((value) => h('option', { value }, value)),
  );
  const table = h('div', { id: 'nodes' });
  const first = h('button', { type: 'button', id: 'nodes-first', hidden: true }, 'First page');
  const next = h('button', { type: 'button', id: 'nodes-next', hidden: true }, 'Next page');
  const title = h('h2', { id: 'node-output-title' }, 'Node output');
  const output = h('pre', { class: 'output', id: 'node-output', tabindex: '0', 'aria-label': 'node output', 'aria-live': 'off' }, 'Choose a node.');
  let cursor: string | null = null;
  let pageCursor: string | null = null;
  let following: AbortController | undefined;

  const drawCounts = async () => {
    const reply = await call('GET', runPath);
    if (reply.status === 200) counts.textContent = countsLine(reply.json!.data.node_counts) || 'no nodes';
  };
  const load = async (from: string | null) => {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (filter.value) query.set('status', filter.value);
    if (from) query.set('cursor', from);
    const reply = await call('GET', `${runPath}/nodes?${query}`);
    if (reply.status !== 200) return replace(table, alert(problem(reply)));
    const nodes = reply.json!.data.nodes as RunNode[];
    pageCursor = from;
    cursor = reply.json!.data.next_cursor;
    next.hidden = !cursor;
    first.hidden = from === null;
    replace(table, nodes.length === 0 ? h('p', {}, 'No nodes.') : nodeTable(nodes, show));
  };
  /** One node's output: the stream of that node only, replacing the one shown before. */
  const show = (node: string) => {
    following?.abort();
    following = new AbortController();
    const mine = following;
    signal.addEventListener('abort', () => mine.abort(), { once: true });
    title.textContent = `Output of ${node}`;
    replace(output);
    let ended = false;
    void followEvents({
      url: `${base}${runPath}/output?node=${encodeURIComponent(node)}`,
      headers: authHeaders(),
      signal: mine.signal,
      ended: () => ended,
      onRefused: (response) => (response.status === 401 ? signedOut() : void (output.textContent = `output: ${response.status}`)),
      onEvent: (event) => {
        if (event.event === 'end') ended = true;
        if (event.event !== 'stdout' && event.event !== 'stderr') return;
        output.append(h('span', { class: event.event }, stripAnsi(event.data.endsWith('\n') ? event.data : `${event.data}\n`)));
      },
    });
  };
  filter.addEventListener('change', () => void load(null));
  next.addEventListener('click', () => void load(cursor));
  first.addEventListener('click', () => void load(null));
  void drawCounts();
  void load(null);

  let due: ReturnType<typeof setTimeout> | undefined;
  const changed = () => {
    due ??= setTimeout(() => {
      due = undefined;
      if (signal.aborted) return;
      void drawCounts();
      void load(pageCursor);
    }, 1000);
  };
  return {
    elements: [
      h('h2', {}, 'Nodes'),
      counts,
      h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter nodes' }, labelled('Node status', filter)),
      table,
      first,
      next,
      title,
      output,
    ],
    changed,
  };
}

/** A page of nodes; each name is a button that shows that node's output. */
function nodeTable(nodes: readonly RunNode[], show: (node: string) => void): HTMLTableElement {
  return h(
    'table',
    {},
    h('caption', {}, `${nodes.length} nodes, by name`),
    h('thead', {}, h('tr', {}, ...['Node', 'Status', 'Exit code', 'Reason', 'Started', 'Ended', 'Output'].map((name) => h('th', { scope: 'col' }, name)))),
    h(
      'tbody',
      {},
      ...nodes.map((node) =>
        h(
          'tr',
          { 'data-node': node.name },
          h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => show(node.name) }, node.name)),
          h('td', {}, h('span', { class: `badge ${node.status}` }, node.status)),
          h('td', {}, node.exit_code === null ? '—' : String(node.exit_code)),
          h('td', {}, node.reason ?? '—'),
          h('td', {}, formatTime(node.started_at)),
          h('td', {}, formatTime(node.ended_at)),
          h('td', {}, `${node.output_bytes} B${node.output_truncated ? ' (truncated)' : ''}`),
        ),
      ),
    ),
  );
}

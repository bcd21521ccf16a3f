/** Approvals: the runs the caller may decide, with payload and dry-run output; approve or reject with a comment. */
import { call, problem } from './api.js';
import { alert, formatTime, h, labelled, replace, status } from './dom.js';
import type { PageContext } from './main.js';
import { approvalFacts, quorumOf, type Run } from './runs.js';
import { stripAnsi } from './sse.js';

export async function approvalsPage({ main }: PageContext): Promise<void> {
  const list = h('div', {});
  replace(main, h('h1', {}, 'Approvals'), list);
  const reply = await call('GET', '/runs?status=awaiting_approval&approvable=true&limit=100');
  if (reply.status !== 200) return replace(list, alert(problem(reply)));
  const runs = reply.json!.data.runs as Run[];
  if (runs.length === 0) return replace(list, h('p', {}, 'Nothing awaits your decision.'));
  // The list answer may leave the dry run out: each run is read in full.
  const full = await Promise.all(runs.map(async (run) => (await call('GET', `/runs/${encodeURIComponent(run.id)}`)).json?.data ?? run));
  replace(list, ...full.map((run: Run) => decision(run)));
}

function decision(run: Run): HTMLElement {
  const comment = h('textarea', { name: 'comment', rows: 2, maxlength: 1000 });
  const note = status();
  const approve = h('button', { type: 'button', class: 'approve' }, 'Approve');
  const reject = h('button', { type: 'button', class: 'reject' }, 'Reject');
  const decide = async (verb: 'approve' | 'reject') => {
    if (verb === 'reject' && comment.value.trim() === '') {
      note.textContent = 'A rejection needs a comment.';
      comment.focus();
      return;
    }
    const body = comment.value.trim() === '' ? {} : { comment: comment.value };
    // One decision per person: neither button while one is on its way, nor after it.
    approve.disabled = reject.disabled = true;
    const reply = await call('POST', `/runs/${encodeURIComponent(run.id)}/${verb}`, { body });
    const code = reply.json?.error?.code;
    if (reply.status === 200) {
      const now = reply.json!.data as Run;
      const waiting = now.status === 'awaiting_approval' ? ` (${quorumOf(now)})` : '';
      note.textContent = `${verb === 'approve' ? 'Approved' : 'Rejected'}: the run is now ${now.status}${waiting}.`;
    } else if (code === 'already_decided' || code === 'run_not_pending') {
      note.textContent = `${problem(reply)}: nothing more to decide here.`;
    } else {
      note.textContent = problem(reply);
      approve.disabled = reject.disabled = false;
    }
  };
  approve.addEventListener('click', () => void decide('approve'));
  reject.addEventListener('click', () => void decide('reject'));
  const dry = run.dry_run;
  return h(
    'section',
    { class: 'card approval', 'aria-label': `run ${run.id}`, 'data-run': run.id },
    h('h2', {}, `${run.toolkit} ${run.endpoint}`),
    h(
      'p',
      {},
      'Requested by ',
      run.actor.username ?? run.actor.kind,
      ' at ',
      formatTime(run.queued_at),
      ' · ',
      h('a', { href: `#/runs/${encodeURIComponent(run.id)}` }, run.id),
    ),
    h('h3', {}, 'Payload'),
    h('pre', { class: 'json', tabindex: '0', 'aria-label': 'payload' }, JSON.stringify(run.payload, null, 2)),
    h('dl', { class: 'facts' }, ...approvalFacts(run).flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)])),
    dry ? h('h3', {}, `Dry run: ${dry.status}${dry.exit_code === null ? '' : `, exit ${dry.exit_code}`}`) : null,
    dry ? h('pre', { class: 'output', tabindex: '0', 'aria-label': 'dry run output' }, stripAnsi(dry.output ?? '')) : null,
    labelled('Comment', comment, 'required to reject'),
    h('div', { class: 'actions' }, approve, reject),
    note,
  );
}

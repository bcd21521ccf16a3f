/** A log read page by page (the audit trail, the notifications' deliveries): filters, newest first, Older and Newer. */
import { call, problem } from './api.js';
import { alert, replace } from './dom.js';

export interface PagedLog<T> {
  /** The route, under {base}: `/admin/audit`. */
  path: string;
  /** Filter controls by query parameter name; empty ones are left out. */
  inputs: Record<string, HTMLInputElement | HTMLSelectElement>;
  /** The member of `data` that holds a page's entries. */
  entries: string;
  /** A page's entries drawn (its number is 1 for the newest). */
  render(entries: T[], page: number): Node;
}

/** The results region, the Newer and Older buttons, and `load` (the current page again); `filter` starts at page 1. */
export function pagedLog<T>(log: PagedLog<T>, older: HTMLButtonElement, newer: HTMLButtonElement, results: HTMLElement) {
  const pages: Array<string | null> = [null];
  let next: string | null = null;
  const load = async (): Promise<void> => {
    const query = new URLSearchParams({ limit: '50' });
    for (const [name, input] of Object.entries(log.inputs)) if (input.value.trim()) query.set(name, input.value.trim());
    const cursor = pages[pages.length - 1];
    if (cursor) query.set('cursor', cursor);
    const reply = await call('GET', `${log.path}?${query}`);
    if (reply.status !== 200) {
      const details = (reply.json?.error?.details as Array<{ field: string; message: string }> | undefined) ?? [];
      return replace(results, alert([problem(reply), ...details.map((each) => `${each.field}: ${each.message}`)].join(' · ')));
    }
    next = reply.json!.data.next_cursor;
    older.disabled = !next;
    newer.disabled = pages.length <= 1;
    replace(results, log.render(reply.json!.data[log.entries] as T[], pages.length));
  };
  older.addEventListener('click', () => (pages.push(next), void load()));
  newer.addEventListener('click', () => (pages.pop(), void load()));
  const filter = (): Promise<void> => {
    pages.length = 1;
    return load();
  };
  return { load, filter };
}

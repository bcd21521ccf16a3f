/**
 * Elements made from text only: `h` sets attributes and appends children as nodes or text nodes. Nothing
 * here, or anywhere in the console, assigns innerHTML: what the gateway or a command says is never markup.
 */

type Child = Node | string | number | null | undefined | false;
type Attributes = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

let ids = 0;
/** A fresh element id, for label/for and aria-describedby. */
export const uid = (prefix: string): string => `${prefix}-${++ids}`;

/** A labelled control in a div: `label` names it for screen readers and clicks. */
export function labelled(label: string, control: HTMLElement, note?: string): HTMLDivElement {
  control.id ||= uid('f');
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, note ? h('span', { class: 'note' }, note) : null);
}

/** A list's filter form (a search landmark): each control labelled, a Filter button, `onFilter` on submit. */
export function filterForm(name: string, controls: Array<[label: string, control: HTMLElement]>, onFilter: () => void): HTMLFormElement {
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': name },
    ...controls.map(([label, control]) => labelled(label, control)),
    h('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (event) => (event.preventDefault(), onFilter()));
  return form;
}

export const formatTime = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');

export function duration(from: string | null | undefined, to: string | null | undefined): string {
  if (!from) return '—';
  const ms = (to ? Date.parse(to) : Date.now()) - Date.parse(from);
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** A status message region that screen readers announce. */
export const status = (text = ''): HTMLParagraphElement => h('p', { role: 'status', class: 'status' }, text);
export const alert = (text: string): HTMLParagraphElement => h('p', { role: 'alert', class: 'error' }, text);

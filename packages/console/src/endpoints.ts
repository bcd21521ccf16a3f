/** Endpoints: what the caller may call (openapi.json), by toolkit, searchable, each with a generated form. */
import { base, call, description, problem } from './api.js';
import { alert, h, labelled, replace, status, uid } from './dom.js';
import { buildRequest, choicesPath, detailsByField, formFields, type FormField, type Operation } from './form-fields.js';
import type { PageContext } from './main.js';

interface Entry {
  toolkit: string;
  method: string;
  path: string;
  operation: Operation;
}

export async function endpointsPage({ main }: PageContext): Promise<void> {
  const document = await description();
  const entries: Entry[] = [];
  for (const [path, item] of Object.entries(document?.paths ?? {})) {
    if (!path.startsWith('/tk/')) continue;
    for (const [method, operation] of Object.entries(item))
      entries.push({ toolkit: operation.tags?.[0] ?? path.split('/')[3]!, method: method.toUpperCase(), path, operation });
  }
  const search = h('input', { type: 'search', placeholder: 'name, path or description' });
  const list = h('div', { class: 'endpoints' });
  const count = status();
  const draw = () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const shown = entries.filter((entry) => {
      const text = `${entry.toolkit} ${entry.method} ${entry.path} ${entry.operation.summary ?? ''} ${entry.operation.description ?? ''}`.toLowerCase();
      return words.every((word) => text.includes(word));
    });
    count.textContent = `${shown.length} of ${entries.length} endpoints`;
    const toolkits = [...new Set(shown.map((entry) => entry.toolkit))].sort();
    replace(
      list,
      ...toolkits.map((toolkit) =>
        h(
          'section',
          { class: 'toolkit', 'aria-label': `toolkit ${toolkit}` },
          h('h2', {}, toolkit),
          ...shown.filter((entry) => entry.toolkit === toolkit).map(endpointCard),
        ),
      ),
    );
  };
  search.addEventListener('input', draw);
  replace(main, h('h1', {}, 'Endpoints'), labelled('Search endpoints', search), count, list);
  draw();
}

/** What a field says under its label: where its value goes. */
function noteOf(field: FormField, hasBody: boolean): string | undefined {
  if (field.in === 'path') return 'in the path';
  if (field.in !== 'raw') return undefined;
  return hasBody ? 'the body as JSON, an object: the fields above are put over it' : 'the rest of the query string, as name=value&name=value (sent as given)';
}

/**
 * A WebSocket endpoint: no call button (a plain GET is 426), but its address and how to connect with the session's
 * token (docs/toolkits.md, WebSockets).
 */
function websocketCard(entry: Entry, summary: HTMLElement): HTMLElement {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const address = `${scheme}://${location.host}${base}${entry.path}`;
  return h(
    'details',
    { class: 'endpoint' },
    summary,
    entry.operation.description ? h('p', { class: 'description' }, entry.operation.description) : null,
    h(
      'div',
      { class: 'websocket', 'data-operation': entry.operation.operationId ?? '' },
      h('p', {}, 'A WebSocket endpoint: open it with a WebSocket client, not from this page (a plain call answers 426 upgrade_required).'),
      h('p', {}, 'Address: ', h('code', {}, address), entry.path.includes('{') ? ' (fill in the path parameters)' : ''),
      h(
        'p',
        {},
        'Sign it with your token: the header ',
        h('code', {}, 'Authorization: Bearer <token>'),
        ', or from a browser the subprotocol ',
        h('code', {}, 'tkgate.bearer.<token>'),
        ' (',
        h('code', {}, 'new WebSocket(url, ["tkgate.bearer." + token])'),
        '). A key from the API keys page works too.',
      ),
    ),
  );
}

function endpointCard(entry: Entry): HTMLElement {
  const websocket = entry.operation['x-websocket'] === true;
  const trigger = entry.operation['x-trigger'];
  const summary = h(
    'summary',
    {},
    h('span', { class: `method ${entry.method.toLowerCase()}` }, entry.method),
    ' ',
    h('code', {}, entry.path),
    ' ',
    websocket ? h('span', { class: 'badge websocket' }, 'WebSocket') : null,
    websocket ? ' ' : null,
    trigger ? h('span', { class: 'badge trigger' }, `triggered by ${trigger.verify} as ${trigger.as}`) : null,
    trigger ? ' ' : null,
    entry.operation.summary ?? '',
  );
  if (websocket) return websocketCard(entry, summary);
  const hasBody = entry.operation.requestBody !== undefined;
  const fields = formFields(entry.operation);
  const controls = new Map<string, { input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement; error: HTMLElement }>();
  const form = h('form', { 'data-operation': entry.operation.operationId ?? '', novalidate: true });
  for (const field of fields) {
    const input = control(field);
    const error = h('span', { class: 'field-error', id: uid('err') });
    input.setAttribute('aria-describedby', error.id);
    controls.set(field.name, { input, error });
    const label = `${field.name}${field.required ? ' (required)' : ''}`;
    const div = labelled(label, input, noteOf(field, hasBody));
    div.dataset.field = field.name;
    div.append(error);
    form.append(div);
  }
  const general = h('div', { class: 'form-errors', 'aria-live': 'polite' });
  const answer = h('div', { class: 'answer', 'aria-live': 'polite' });
  form.append(general, h('button', { type: 'submit' }, `Call ${entry.method}`), answer);
  const valuesOf = () => {
    const values: Record<string, string | boolean> = {};
    for (const [name, { input }] of controls) values[name] = input instanceof HTMLInputElement && input.type === 'checkbox' ? input.checked : input.value;
    return values;
  };
  // A signed call needs no credential; the form still calls it with the session's (docs/triggers.md).
  const triggered = trigger
    ? h('p', { class: 'trigger' }, `Triggered by ${trigger.verify} as ${trigger.as}: signed calls need no credential; this form calls it as you.`)
    : null;
  const details = h(
    'details',
    { class: 'endpoint' },
    summary,
    entry.operation.description ? h('p', { class: 'description' }, entry.operation.description) : null,
    triggered,
    form,
  );
  wireChoices(entry, fields, controls, valuesOf, details);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const { input, error } of controls.values()) {
      error.textContent = '';
      input.removeAttribute('aria-invalid');
    }
    replace(general);
    replace(answer, status('Calling…'));
    const values = valuesOf();
    const request = buildRequest(entry.path, fields, values, hasBody);
    if (request.invalid.length > 0) {
      showDetails(request.invalid, fields, controls, general);
      replace(answer);
      return;
    }
    const query = request.query.toString();
    const reply = await call(entry.method, `${request.path}${query ? `?${query}` : ''}`, { body: request.body, raw: true });
    await showAnswer(reply.response, answer, general, fields, controls);
  });
  return details;
}

/**
 * The selects of fields with choices_from: filled from GET {base}/choices/... when the card opens, and again when a
 * field named in their args changes (a cascade: a changed environment reloads the hosts). A field whose args are not
 * all filled in says which one it waits for; a failed load says why at the field.
 */
function wireChoices(
  entry: Entry,
  fields: readonly FormField[],
  controls: Map<string, { input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement; error: HTMLElement }>,
  valuesOf: () => Record<string, string | boolean>,
  details: HTMLDetailsElement,
): void {
  const choiceFields = fields.filter((field) => field.choices);
  if (choiceFields.length === 0) return;
  const loads = new Map<string, number>();
  const load = async (field: FormField): Promise<void> => {
    const { input, error } = controls.get(field.name)!;
    const select = input as HTMLSelectElement;
    const turn = (loads.get(field.name) ?? 0) + 1;
    loads.set(field.name, turn);
    const where = choicesPath(entry.path, field, valuesOf());
    const placeholder = (text: string) => h('option', { value: '' }, text);
    if ('waitFor' in where) {
      field.options = [];
      replace(select, placeholder(`choose ${where.waitFor} first`));
      select.dispatchEvent(new Event('change'));
      return;
    }
    select.setAttribute('aria-busy', 'true');
    const reply = await call('GET', where.path);
    if (loads.get(field.name) !== turn) return;
    select.removeAttribute('aria-busy');
    const choices =
      reply.status === 200 && Array.isArray(reply.json?.data?.choices) ? (reply.json!.data.choices as Array<{ value: unknown; label: string }>) : undefined;
    if (!choices) {
      field.options = [];
      replace(select, placeholder('—'));
      error.textContent = `the choices could not be loaded: ${problem(reply)}`;
      select.dispatchEvent(new Event('change'));
      return;
    }
    error.textContent = '';
    const previous = select.value;
    field.options = choices.map((choice) => choice.value);
    replace(select, placeholder('—'), ...choices.map((choice) => h('option', { value: String(choice.value) }, choice.label)));
    if (choices.some((choice) => String(choice.value) === previous)) select.value = previous;
    select.dispatchEvent(new Event('change'));
  };
  for (const field of choiceFields) {
    for (const from of new Set(Object.values(field.choices!.args))) controls.get(from)?.input.addEventListener('change', () => void load(field));
  }
  // Loaded once the card is opened: a page of endpoints asks no choices endpoint until a form is wanted.
  let opened = false;
  details.addEventListener('toggle', () => {
    if (!details.open || opened) return;
    opened = true;
    for (const field of choiceFields)
      if (!Object.values(field.choices!.args).some((from) => choiceFields.some((other) => other.name === from))) void load(field);
  });
}

function control(field: FormField): HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement {
  const common = { name: field.name, required: field.required, 'aria-required': field.required ? 'true' : null };
  if (field.kind === 'select') {
    return h(
      'select',
      common,
      field.required ? null : h('option', { value: '' }, '—'),
      ...(field.options ?? []).map((option) => h('option', { value: String(option) }, String(option))),
    );
  }
  if (field.kind === 'checkbox') return h('input', { ...common, type: 'checkbox' });
  if (field.kind === 'number')
    return h('input', { ...common, type: 'number', step: field.integer ? '1' : 'any', inputmode: field.integer ? 'numeric' : 'decimal' });
  if (field.in === 'raw' && field.kind === 'json') return h('textarea', { ...common, rows: 5, placeholder: '{ "name": "value" }', spellcheck: 'false' });
  if (field.in === 'raw') return h('input', { ...common, type: 'text', placeholder: 'name=value&other=value', spellcheck: 'false' });
  if (field.kind === 'json') return h('textarea', { ...common, rows: 2, placeholder: 'JSON' });
  // A secret field: typed, sent, never shown (nor offered to the browser's password store).
  if (field.secret) return h('input', { ...common, type: 'password', autocomplete: 'new-password', spellcheck: 'false' });
  return h('input', {
    ...common,
    type: 'text',
    maxlength: field.maxLength ?? null,
    pattern: field.pattern ?? null,
    title: field.pattern ? `pattern ${field.pattern}` : null,
  });
}

type Controls = Map<string, { input: HTMLElement; error: HTMLElement }>;

function showDetails(details: unknown, fields: readonly FormField[], controls: Controls, general: HTMLElement): void {
  for (const [name, messages] of detailsByField(details, fields)) {
    const target = controls.get(name);
    if (target) {
      target.error.textContent = messages.join('; ');
      target.input.setAttribute('aria-invalid', 'true');
    } else general.append(alert(messages.join('; ')));
  }
}

async function showAnswer(response: Response, answer: HTMLElement, general: HTMLElement, fields: readonly FormField[], controls: Controls): Promise<void> {
  const type = response.headers.get('content-type') ?? '';
  const attachment = /^\s*attachment/i.test(response.headers.get('content-disposition') ?? '');
  if (!attachment && (response.status === 204 || response.headers.get('content-length') === '0')) {
    replace(answer, h('p', {}, `${response.status}, no body`));
    return;
  }
  // A forwarded answer in text (the upstream's own text, HTML or JSON): shown as text, never as markup.
  if (!attachment && !type.includes('application/json') && (/^text\//.test(type) || /[/+]json\b/.test(type))) {
    const text = await response.text();
    replace(answer, h('p', {}, `${response.status} ${type}`), h('pre', { class: 'json', tabindex: '0', 'aria-label': 'answer' }, text));
    return;
  }
  if (!type.includes('application/json')) {
    // A passthrough answer: offered as a download, never shown as markup.
    const blob = await response.blob();
    const name = /filename="?([^";]+)"?/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'download';
    const link = h('a', { href: URL.createObjectURL(blob), download: name, class: 'button' }, `Download ${name} (${blob.size} bytes)`);
    replace(answer, h('p', {}, `${response.status} ${type || 'no type'}`), link);
    link.click();
    return;
  }
  const json = await response.json().catch(() => undefined);
  if (response.status === 202 && json?.data?.run_id) {
    location.hash = `#/runs/${encodeURIComponent(json.data.run_id)}`;
    return;
  }
  if (response.status === 400 && json?.error?.details) showDetails(json.error.details, fields, controls, general);
  const summary = json?.success === false ? alert(`${response.status} ${json.error.code}: ${json.error.message}`) : h('p', {}, `${response.status}`);
  replace(answer, summary, h('pre', { class: 'json', tabindex: '0', 'aria-label': 'answer' }, JSON.stringify(json, null, 2)));
}

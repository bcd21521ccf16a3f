// The tkgate example browser client: a static page on another origin than the gateway (no framework, no
// build). It logs in, lists the caller's endpoints from {base}/openapi.json, builds a form per endpoint
// from its request schema, calls it with the bearer token and shows the answer's envelope.
// The token lives in this page's memory only: nothing is stored, so a reload means logging in again.

const $ = (id) => document.getElementById(id);
const session = { token: null };

const gatewayUrl = () => $('gateway').value.trim().replace(/\/+$/, '');

/** One call to the gateway: the status, the X-Request-Id header (readable thanks to CORS Expose-Headers) and the body. */
async function callGateway(method, path, { json, query, credentials = 'same-origin' } = {}) {
  const url = new URL(gatewayUrl() + path);
  for (const [name, value] of query ?? []) url.searchParams.append(name, value);
  const headers = {};
  if (session.token) headers.authorization = `Bearer ${session.token}`;
  if (json !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(url, { method, headers, credentials, body: json === undefined ? undefined : JSON.stringify(json) });
  } catch {
    throw new Error(`the gateway ${gatewayUrl()} cannot be reached from this page, or does not allow its origin ${location.origin} (server.cors.origins)`);
  }
  const type = response.headers.get('content-type') ?? '';
  const body = type.includes('json') ? await response.json() : await response.blob();
  return { status: response.status, requestId: response.headers.get('x-request-id'), type, body, disposition: response.headers.get('content-disposition') };
}

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = message === '';
}

function element(tag, properties = {}, children = []) {
  const node = Object.assign(document.createElement(tag), properties);
  node.append(...children);
  return node;
}

// ---- session -------------------------------------------------------------------------------------

async function logIn(event) {
  event.preventDefault();
  showError('');
  try {
    const reply = await callGateway('POST', '/auth/login', { json: { username: $('username').value, password: $('password').value } });
    $('password').value = '';
    await startSession(reply, 'Logged in');
  } catch (err) {
    showError(err.message);
  }
}

/** The answer of a password login or of a login_code exchange: the same data. */
async function startSession(reply, how) {
  if (reply.status !== 200) return showError(`login refused: ${reply.body.error?.code ?? reply.status} (${reply.body.error?.message ?? ''})`);
  session.token = reply.body.data.token;
  const { user } = reply.body.data;
  showSession(`${how} as ${user.username} (power ${user.power}); request ${reply.requestId}`);
  await listEndpoints();
}

// ---- single sign-on (docs/sso.md) ----------------------------------------------------------------

/** The page's own address without its fragment: where the gateway sends the browser back (an allowed return_to). */
const returnTo = () => location.href.split('#')[0];

/** Off to the gateway, which sends the browser on to the identity provider's login page. */
function signInWithProvider(event) {
  event.preventDefault();
  const provider = encodeURIComponent($('provider').value.trim());
  location.assign(`${gatewayUrl()}/auth/oidc/${provider}/login?return_to=${encodeURIComponent(returnTo())}`);
}

/**
 * Back from the provider: the fragment holds `login_code` (single use, 60 s) or `error`. The fragment is dropped
 * from the address bar and history at once, then the code is exchanged for a session token.
 */
async function finishSignIn() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (!fragment.has('login_code') && !fragment.has('error')) return;
  history.replaceState(null, '', returnTo());
  if (fragment.has('error')) return showError(`sign-in refused: ${fragment.get('error')}`);
  try {
    // With the gateway's cookie: the code is bound to the browser that signed in (docs/sso.md).
    const exchange = { json: { login_code: fragment.get('login_code') }, credentials: 'include' };
    await startSession(await callGateway('POST', '/auth/oidc/exchange', exchange), 'Signed in');
  } catch (err) {
    showError(err.message);
  }
}

async function logOut() {
  showError('');
  try {
    const reply = await callGateway('POST', '/auth/logout');
    if (reply.status !== 200) showError(`logout: ${reply.body.error?.code ?? reply.status}`);
    // An OIDC session: the provider's own session lives on until the person signs out there too.
    const endSession = /^https?:\/\//.test(reply.body.data?.end_session_url ?? '') ? reply.body.data.end_session_url : null;
    $('end-session').hidden = !endSession;
    if (endSession) $('end-session').href = endSession;
  } catch (err) {
    showError(err.message);
  }
  session.token = null;
  showSession('Logged out.');
  $('endpoints').replaceChildren();
}

function showSession(text) {
  $('who').textContent = text;
  $('who').hidden = false;
  $('logout').hidden = session.token === null;
  $('login-form').hidden = session.token !== null;
  $('sso-form').hidden = session.token !== null;
}

// ---- endpoints from openapi.json ------------------------------------------------------------------

async function listEndpoints() {
  const reply = await callGateway('GET', '/openapi.json');
  if (reply.status !== 200) return showError(`openapi.json: ${reply.body.error?.code ?? reply.status}`);
  const document = reply.body;
  const sections = new Map();
  for (const tag of document.tags ?? []) {
    if (tag.name === 'auth') continue;
    sections.set(
      tag.name,
      element('section', { className: 'toolkit' }, [element('h2', { textContent: tag.name }), element('p', { textContent: tag.description ?? '' })]),
    );
  }
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const section = sections.get(operation.tags?.[0]);
      if (section) section.append(endpointForm(path, method.toUpperCase(), operation));
    }
  }
  $('endpoints').replaceChildren(...sections.values());
}

/** The fields of an operation: query parameters for GET, the JSON body's properties for POST. */
function fieldsOf(method, operation) {
  if (method === 'GET')
    return (operation.parameters ?? []).map((parameter) => ({ name: parameter.name, schema: parameter.schema ?? {}, required: parameter.required }));
  const content = operation.requestBody?.content ?? {};
  const schema = (content['application/json'] ?? Object.values(content)[0])?.schema ?? {};
  return Object.entries(schema.properties ?? {}).map(([name, field]) => ({ name, schema: field, required: (schema.required ?? []).includes(name) }));
}

function endpointForm(path, method, operation) {
  const fields = fieldsOf(method, operation);
  const form = element('form', { className: 'endpoint', noValidate: true }, [
    element('h3', {}, [element('span', { className: 'method', textContent: method }), element('code', { textContent: path })]),
    element('p', { className: 'description', textContent: operation.description ?? operation.summary ?? '' }),
    element('div', { className: 'fields' }, fields.map(fieldInput)),
    element('button', { type: 'submit', textContent: 'Call' }),
    element('div', { className: 'result', hidden: true }),
  ]);
  form.dataset.operation = operation.operationId;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void callEndpoint(form, path, method, fields);
  });
  return form;
}

function fieldInput({ name, schema, required }) {
  let input;
  if (schema.enum || schema.type === 'boolean') {
    const choices = schema.enum ?? [true, false];
    input = element('select', {}, [
      element('option', { value: '', textContent: '(none)' }),
      ...choices.map((value) => element('option', { value: JSON.stringify(value), textContent: String(value) })),
    ]);
    input.dataset.json = 'true';
  } else {
    input = element('input', { type: schema.type === 'integer' || schema.type === 'number' ? 'number' : 'text' });
    if (schema.type === 'number') input.step = 'any';
    input.placeholder = schema.pattern ? `matches ${schema.pattern}` : (schema.type ?? 'any JSON');
  }
  input.name = name;
  input.dataset.type = schema.type ?? '';
  const caption = element('span', { textContent: schema.maxLength !== undefined ? `${name} (≤ ${schema.maxLength})` : name });
  if (required) caption.className = 'required';
  return element('label', {}, [caption, input]);
}

/** A field's value as the endpoint expects it in a JSON body; undefined when left empty. */
function jsonValue(input) {
  const text = input.value;
  if (text === '') return undefined;
  if (input.dataset.json === 'true') return JSON.parse(text);
  switch (input.dataset.type) {
    case 'integer':
    case 'number':
      return Number(text);
    case 'object':
    case 'array':
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    default:
      return text;
  }
}

async function callEndpoint(form, path, method, fields) {
  showError('');
  const values = fields.map(({ name }) => [name, form.elements.namedItem(name)]);
  const result = form.querySelector('.result');
  try {
    const reply =
      method === 'GET'
        ? await callGateway('GET', path, {
            query: values
              .filter(([, input]) => input.value !== '')
              .map(([name, input]) => [name, input.dataset.json === 'true' ? String(JSON.parse(input.value)) : input.value]),
          })
        : await callGateway('POST', path, {
            json: Object.fromEntries(values.map(([name, input]) => [name, jsonValue(input)]).filter(([, value]) => value !== undefined)),
          });
    showResult(result, reply);
    if (reply.status === 401) {
      session.token = null;
      showSession('The session ended; log in again.');
    }
  } catch (err) {
    showError(err.message);
  }
}

function showResult(result, reply) {
  result.hidden = false;
  result.classList.toggle('failed', reply.status >= 400);
  const meta = element('p', { className: 'meta' }, [
    `HTTP ${reply.status} · X-Request-Id: `,
    element('code', { className: 'request-id', textContent: reply.requestId ?? '(not readable)' }),
  ]);
  if (reply.body instanceof Blob) {
    const name = /filename="?([^";]+)"?/.exec(reply.disposition ?? '')?.[1] ?? 'download';
    const link = element('a', {
      href: URL.createObjectURL(reply.body),
      download: name,
      textContent: `${name} (${reply.body.size} bytes, ${reply.type || 'no type'})`,
    });
    result.replaceChildren(meta, element('pre', { className: 'envelope' }, [link]));
    return;
  }
  result.replaceChildren(meta, element('pre', { className: 'envelope', textContent: JSON.stringify(reply.body, null, 2) }));
}

// ---- start ---------------------------------------------------------------------------------------

$('gateway').value = new URLSearchParams(location.search).get('gateway') ?? 'http://127.0.0.1:8080/api';
$('login-form').addEventListener('submit', logIn);
$('logout').addEventListener('click', logOut);
$('sso-form').addEventListener('submit', signInWithProvider);
void finishSignIn();

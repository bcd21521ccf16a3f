/** A thin HTTP client over fetch for the tests: JSON in, status + headers + parsed JSON out. */
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
}

export async function call(method: string, url: string, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | Uint8Array | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(url, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: the test sees the text.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** The auth endpoints of one running gateway. */
export function authClient(base: string) {
  return {
    login: (username: string, password: string, headers?: Record<string, string>) =>
      call('POST', `${base}/auth/login`, { body: { username, password }, headers }),
    logout: (token: string) => call('POST', `${base}/auth/logout`, { token }),
    status: (token?: string) => call('GET', `${base}/auth/status`, { token }),
    clearSessions: (token: string, body: unknown) => call('POST', `${base}/auth/clear-sessions`, { token, body }),
  };
}

export async function loginToken(base: string, username: string, password: string): Promise<string> {
  const reply = await authClient(base).login(username, password);
  if (reply.status !== 200) throw new Error(`login of ${username} failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.data.token as string;
}

/** Toolkit endpoints of one running gateway: {base}/tk/<kind>/<toolkit>/<path>. */
export function toolkitClient(base: string, token: string | undefined, kind = 'app') {
  const url = (toolkit: string, path: string) => `${base}/tk/${kind}/${toolkit}/${path}`;
  return {
    get: (toolkit: string, path: string, query: Record<string, string> = {}, options: CallOptions = {}) =>
      call('GET', `${url(toolkit, path)}${Object.keys(query).length ? `?${new URLSearchParams(query)}` : ''}`, { token, ...options }),
    post: (toolkit: string, path: string, body?: unknown, options: CallOptions = {}) => call('POST', url(toolkit, path), { token, body, ...options }),
  };
}

/** The API key routes of one running gateway (docs/api-keys.md). */
export function apiKeyClient(base: string) {
  return {
    create: (token: string, body: unknown) => call('POST', `${base}/auth/api-keys`, { token, body }),
    list: (token: string, username?: string) =>
      call('GET', `${base}/auth/api-keys${username === undefined ? '' : `?username=${encodeURIComponent(username)}`}`, { token }),
    revoke: (token: string, id: string) => call('DELETE', `${base}/auth/api-keys/${encodeURIComponent(id)}`, { token }),
  };
}

/** A new API key of the session's user (or, for an admin, of `username`): its text and id. */
export async function apiKeyOf(base: string, token: string, body: Record<string, unknown> = { name: 'test' }): Promise<{ key: string; id: string }> {
  const reply = await apiKeyClient(base).create(token, body);
  if (reply.status !== 201) throw new Error(`api key not created: ${reply.status} ${JSON.stringify(reply.body)}`);
  return { key: reply.body.data.key as string, id: reply.body.data.id as string };
}

/**
 * The gateway's API, same origin: `{base}` is the page's path before `/console/`. The session token lives in
 * sessionStorage only (gone with the tab); any 401 clears it and returns to the sign-in page.
 */

export const base = location.pathname.replace(/\/console(\/.*)?$/, '');
const TOKEN = 'tkgate.token';

export const token = (): string | null => sessionStorage.getItem(TOKEN);
export const setToken = (value: string): void => sessionStorage.setItem(TOKEN, value);
export const clearToken = (): void => sessionStorage.removeItem(TOKEN);

export interface Reply {
  status: number;
  response: Response;
  /** The parsed JSON body, when it was JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each page reads the fields of its route's data
  json?: { success: boolean; data?: any; error?: { code: string; message: string; details?: unknown } };
}

let onUnauthorized: () => void = () => undefined;
export const whenUnauthorized = (handler: () => void): void => void (onUnauthorized = handler);

/** The session is gone (a 401): back to the sign-in page. */
export function signedOut(): void {
  clearToken();
  onUnauthorized();
}

export const authHeaders = (): Record<string, string> => {
  const current = token();
  return current ? { authorization: `Bearer ${current}` } : {};
};

export interface CallOptions {
  body?: unknown;
  /** Keep the body as a Response (a download): the JSON is not read. */
  raw?: boolean;
}

/** Calls `{base}{path}`; a 401 signs out (unless it is the sign-in call itself). */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...authHeaders() };
  const init: RequestInit = { method, headers, cache: 'no-store' };
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(`${base}${path}`, init);
  const reply: Reply = { status: response.status, response };
  if (response.status === 401 && !path.startsWith('/auth/login') && !path.startsWith('/auth/oidc/')) signedOut();
  const type = response.headers.get('content-type') ?? '';
  if (!options.raw && type.includes('json')) reply.json = await response.json().catch(() => undefined);
  return reply;
}

/** The error of a failed reply, as one line. */
export function problem(reply: Reply): string {
  const error = reply.json?.error;
  return error ? `${reply.status} ${error.code}: ${error.message}` : `${reply.status} ${reply.response.statusText}`;
}

export interface OpenApi {
  paths: Record<string, Record<string, import('./form-fields.js').Operation>>;
}
let openapi: Promise<OpenApi | undefined> | undefined;
/** The caller's openapi.json (filtered to what they may call), read once per sign-in. */
export function description(): Promise<OpenApi | undefined> {
  return (openapi ??= call('GET', '/openapi.json').then((reply) => (reply.status === 200 ? (reply.json as unknown as OpenApi) : undefined)));
}
export const forgetDescription = (): void => void (openapi = undefined);

/**
 * What a browser does during a sign-in, with fetch: keeps the provider's cookies, follows redirects by hand
 * (so the test sees each hop), and fills in the provider's login and consent forms as a person would.
 */
export class UserAgent {
  private readonly cookies = new Map<string, string>();

  async get(url: string): Promise<Response> {
    return this.send(url, { method: 'GET' });
  }

  async post(url: string, fields: Record<string, string>): Promise<Response> {
    return this.send(url, { method: 'POST', body: new URLSearchParams(fields), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }

  /** A script's JSON call from a page of this browser (the OIDC exchange): with the browser's cookies. */
  async postJson(url: string, body: unknown): Promise<Response> {
    return this.send(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  }

  /** Another browser holding the same cookies (a copied cookie jar: a replay with the right cookie). */
  copy(): UserAgent {
    const other = new UserAgent();
    for (const [name, value] of this.cookies) other.cookies.set(name, value);
    return other;
  }

  /** The names of the cookies this browser holds. */
  cookieNames(): string[] {
    return [...this.cookies.keys()];
  }

  private async send(url: string, init: RequestInit): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  /**
   * From a gateway login URL through the provider's pages (login as `sub`, consent) until the provider sends the
   * browser back to a URL starting with `until` (the gateway's callback): that URL, not yet visited.
   */
  async signIn(loginUrl: string, sub: string, until: string): Promise<string> {
    let url = loginUrl;
    for (let hop = 0; hop < 20; hop++) {
      if (url.startsWith(until) && hop > 0) return url;
      const response = await this.get(url);
      const location = response.headers.get('location');
      if (location) {
        url = new URL(location, url).href;
        continue;
      }
      const page = await response.text();
      if (response.status !== 200) throw new Error(`sign-in stopped at ${url}: ${response.status} ${page.slice(0, 300)}`);
      url = await this.submitForm(url, page, sub);
    }
    throw new Error('sign-in did not come back');
  }

  /** Submits the provider's login or consent form; returns where it redirects. */
  private async submitForm(pageUrl: string, page: string, sub: string): Promise<string> {
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(page)?.[1];
    if (!action || !prompt) throw new Error(`no form at ${pageUrl}: ${page.slice(0, 300)}`);
    const fields: Record<string, string> = prompt === 'login' ? { prompt, login: sub, password: 'correct horse battery staple' } : { prompt };
    const response = await this.post(new URL(action, pageUrl).href, fields);
    const location = response.headers.get('location');
    if (!location) throw new Error(`the ${prompt} form answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    return new URL(location, pageUrl).href;
  }

  /** The provider's RP-initiated logout: its confirmation page, confirmed; the provider then calls back-channel logout. */
  async endProviderSession(endSessionUrl: string): Promise<Response> {
    const page = await (await this.get(endSessionUrl)).text();
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)?.[1];
    if (!action || !xsrf) throw new Error(`no logout form: ${page.slice(0, 300)}`);
    return this.post(new URL(action, endSessionUrl).href, { xsrf, logout: 'yes' });
  }
}

/**
 * Whether a `return_to` is under one of a provider's allowed prefixes (docs/sso.md, "Configuration"): the same origin, and a
 * path equal to the prefix's or continuing it after a `/` (`/after` covers `/after/x`, never `/afterwards`);
 * query and fragment are free. Compared on parsed URLs, so look-alike hosts
 * (`https://tools.example.org.evil.test`), user info (`https://tools.example.org@evil.test`), backslashes and
 * dot segments are judged as the browser will resolve them. A URL with user info is refused outright.
 */
export function isAllowedReturnTo(returnTo: string, prefixes: readonly string[]): boolean {
  if (!URL.canParse(returnTo)) return false;
  const target = new URL(returnTo);
  if (target.username !== '' || target.password !== '' || (target.protocol !== 'https:' && target.protocol !== 'http:')) return false;
  return prefixes.some((prefix) => {
    const allowed = new URL(prefix);
    if (allowed.origin !== target.origin) return false;
    const path = allowed.pathname.endsWith('/') ? allowed.pathname.slice(0, -1) : allowed.pathname;
    return target.pathname === path || target.pathname === `${path}/` || target.pathname.startsWith(`${path}/`);
  });
}

import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewayContext } from '../../http/context.js';
import { LOGIN_CODE_MS } from './login-codes.js';
import { PENDING_LOGIN_MS } from './pending-logins.js';

/**
 * Binds a sign-in to the browser that started it, twice (login CSRF: RFC 6749 §10.12, RFC 9700 §4.7):
 *
 * - the login sets a cookie holding the SHA-256 of its `state`; the callback goes on only when the browser sends
 *   it back, so a callback URL started by one browser (an attacker's) cannot complete in another (a victim's);
 * - the callback sets a cookie holding a fresh random secret beside the `#login_code` it hands out; the code is
 *   stored hashed with that secret, so the exchange finds it only when the same browser sends the cookie: an
 *   attacker who completes his own sign-in and sends the console link with his code to a victim signs nobody in.
 *
 * One cookie per login and per code (their names carry the start of a hash), so sign-ins started in two tabs both
 * complete. HttpOnly, `Path=/`, as long as what they bind. On HTTPS their names start with `__Host-`: the browser
 * then keeps only a Secure cookie set by this very host, so a sibling subdomain cannot plant one. That prefix
 * requires Secure, which a browser refuses over plain HTTP, so a plain-HTTP listener (loopback, behind a proxy
 * that is not trusted) uses the bare names; the routes look for the names of their own scheme only.
 * The login's cookie is `SameSite=Lax` (it must come back on the provider's top-level redirect); the code's is
 * `SameSite=Strict`: the exchange is a script's call from a page of the gateway's site (docs/sso.md).
 */
const digest = (text: string): string => hash('sha256', text, 'base64url');

const cookieName = (ctx: GatewayContext, kind: 'oidc' | 'login', textDigest: string): string =>
  `${ctx.secure ? '__Host-' : ''}tkgate-${kind}-${textDigest.slice(0, 12)}`;

const attributes = (ctx: GatewayContext, sameSite: 'lax' | 'strict') => ({
  httpOnly: true,
  secure: ctx.secure,
  sameSite,
  path: '/',
  signed: false,
  overwrite: true,
});

const sameText = (sent: string | undefined, expected: string): boolean =>
  sent !== undefined && sent.length === expected.length && timingSafeEqual(Buffer.from(sent), Buffer.from(expected));

/** Reads a cookie and clears it when it was sent (each binding is used once). */
function takeCookie(ctx: GatewayContext, name: string, sameSite: 'lax' | 'strict'): string | undefined {
  const sent = ctx.cookies.get(name, { signed: false });
  if (sent !== undefined) ctx.cookies.set(name, null, attributes(ctx, sameSite));
  return sent;
}

/** At the login: the browser keeps the state's hash for as long as the login is pending. */
export function bindToBrowser(ctx: GatewayContext, state: string): void {
  const stateDigest = digest(state);
  ctx.cookies.set(cookieName(ctx, 'oidc', stateDigest), stateDigest, { ...attributes(ctx, 'lax'), maxAge: PENDING_LOGIN_MS });
}

/** At the callback: whether this browser started the login of `state`; its cookie is cleared either way. */
export function takeBrowserBinding(ctx: GatewayContext, state: string): boolean {
  const stateDigest = digest(state);
  return sameText(takeCookie(ctx, cookieName(ctx, 'oidc', stateDigest), 'lax'), stateDigest);
}

/** A browser secret for a login_code: 32 random bytes, base64url (the cookie's value, and part of the code's hash). */
export const newCodeBinding = (): string => randomBytes(32).toString('base64url');

/** At the callback: this browser keeps the code's secret for as long as the code lives. */
export function bindCodeToBrowser(ctx: GatewayContext, code: string, binding: string): void {
  ctx.cookies.set(cookieName(ctx, 'login', digest(code)), binding, { ...attributes(ctx, 'strict'), maxAge: LOGIN_CODE_MS });
}

/** At the exchange: the secret this browser was given with `code`, or undefined (another browser); its cookie is cleared. */
export function takeCodeBinding(ctx: GatewayContext, code: string): string | undefined {
  const sent = takeCookie(ctx, cookieName(ctx, 'login', digest(code)), 'strict');
  return sent !== undefined && /^[\w-]{43}$/.test(sent) ? sent : undefined;
}

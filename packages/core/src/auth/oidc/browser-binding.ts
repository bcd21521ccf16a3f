import { hash, timingSafeEqual } from 'node:crypto';
import type { GatewayContext } from '../../http/context.js';
import { PENDING_LOGIN_MS } from './pending-logins.js';

/**
 * Binds a pending login to the browser that started it (login CSRF: RFC 6749 §10.12, RFC 9700 §4.7). The login
 * sets a cookie holding the SHA-256 of its `state`; the callback goes on only when the browser sends it back, so
 * a callback URL started by one browser (an attacker's) cannot complete in another (a victim's).
 *
 * One cookie per login (its name carries the start of the hash), so sign-ins started in two tabs both complete.
 * HttpOnly, `SameSite=Lax` (sent on the provider's top-level redirect back, never on a cross-site subrequest),
 * `Path=/`, as long as the pending login. On HTTPS its name starts with `__Host-`: the browser then keeps only a
 * Secure cookie set by this very host, so a sibling subdomain cannot plant one. That prefix requires Secure,
 * which a browser refuses over plain HTTP, so a plain-HTTP listener (loopback, behind a proxy that is not
 * trusted) uses the bare name; the callback looks for the name of its own scheme only.
 */
const digest = (state: string): string => hash('sha256', state, 'base64url');

const cookieName = (ctx: GatewayContext, stateDigest: string): string => `${ctx.secure ? '__Host-' : ''}tkgate-oidc-${stateDigest.slice(0, 12)}`;

const attributes = (ctx: GatewayContext) => ({ httpOnly: true, secure: ctx.secure, sameSite: 'lax' as const, path: '/', signed: false, overwrite: true });

/** At the login: the browser keeps the state's hash for as long as the login is pending. */
export function bindToBrowser(ctx: GatewayContext, state: string): void {
  const stateDigest = digest(state);
  ctx.cookies.set(cookieName(ctx, stateDigest), stateDigest, { ...attributes(ctx), maxAge: PENDING_LOGIN_MS });
}

/** At the callback: whether this browser started the login of `state`; its cookie is cleared either way. */
export function takeBrowserBinding(ctx: GatewayContext, state: string): boolean {
  const stateDigest = digest(state);
  const name = cookieName(ctx, stateDigest);
  const sent = ctx.cookies.get(name, { signed: false });
  if (sent !== undefined) ctx.cookies.set(name, null, attributes(ctx));
  return sent !== undefined && sent.length === stateDigest.length && timingSafeEqual(Buffer.from(sent), Buffer.from(stateDigest));
}

import type { GatewayMiddleware } from './context.js';

/** What a preflight may ask for: the gateway's methods, and the two headers its clients send. */
const PREFLIGHT_HEADERS = {
  'Access-Control-Allow-Methods': 'GET, HEAD, POST, DELETE',
  'Access-Control-Allow-Headers': 'authorization, content-type',
  'Access-Control-Max-Age': '600',
};

/**
 * Response headers a page may read besides the CORS-safelisted ones: the request id, Retry-After of a
 * 429/503, the file name of a passthrough download, and a limited endpoint's rate-limit headers.
 */
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, Content-Disposition, RateLimit-Policy, RateLimit';

/**
 * CORS for `server.cors.origins` (docs/browsers-and-editors.md, "CORS"): undefined when the list is empty, so the gateway does
 * no CORS work at all. A listed origin's preflight is answered here, before authentication and routing;
 * its other requests carry Allow-Origin and Expose-Headers whatever their answer (errors included, since
 * this runs outside the error envelope). An unlisted origin gets no CORS header and the browser refuses.
 * Tokens travel in the Authorization header, never in cookies, so `["*"]` is answered with a literal `*` and
 * Allow-Credentials is not sent, except on `credentialed` paths: the OIDC exchange, whose login_code is bound to
 * the browser's cookie (docs/sso.md), answers an allowed origin by name with Allow-Credentials.
 */
export function cors(origins: readonly string[], credentialed: ReadonlySet<string> = new Set()): GatewayMiddleware | undefined {
  if (origins.length === 0) return undefined;
  const anyOrigin = origins.includes('*');
  const listed = new Set(origins);
  return async (ctx, next) => {
    const withCredentials = credentialed.has(ctx.path);
    // With a list, the answer depends on the Origin header: shared caches must keep them apart.
    if (!anyOrigin || withCredentials) ctx.vary('Origin');
    const origin = ctx.get('origin');
    if (origin === '' || !(anyOrigin || listed.has(origin))) return next();
    ctx.set('Access-Control-Allow-Origin', anyOrigin && !withCredentials ? '*' : origin);
    if (withCredentials) ctx.set('Access-Control-Allow-Credentials', 'true');
    if (ctx.method === 'OPTIONS' && ctx.get('access-control-request-method') !== '') {
      ctx.set(PREFLIGHT_HEADERS);
      ctx.status = 204;
      return;
    }
    ctx.set('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    await next();
  };
}

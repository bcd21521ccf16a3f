/**
 * `{name}` in an upstream URL's path (forward: request and websocket: true): the endpoint's path parameter of that
 * name, filled in here only. The URL parser keeps the braces percent-encoded (`%7Bname%7D`) in the path, and leaves
 * them as they are in a query, so a parsed URL's path or whole href is filled in alike.
 */
const URL_PARAM = /%7B([A-Za-z_][A-Za-z0-9_]*)%7D/g;

/** The `{name}`s of an upstream URL's path: each must be a parameter of the endpoint's path (checked at load). */
export function urlParams(url: string): string[] {
  return [...new URL(url).pathname.matchAll(URL_PARAM)].map((match) => match[1]!);
}

/**
 * A parsed URL's path (or href) with each `{name}` replaced by its path parameter: one segment of [A-Za-z0-9._~-],
 * never `.` or `..` (checked at step 4), so it goes in as it is.
 */
export function fillPathParams(encoded: string, params: Record<string, unknown> | undefined): string {
  return params ? encoded.replace(URL_PARAM, (_, name: string) => String(params[name])) : encoded;
}

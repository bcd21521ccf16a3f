/**
 * Every error code tkgate's core answers with, in one place: its HTTP status and what it means.
 * docs/errors.md is generated from this table (`node scripts/error-docs.js`); a test keeps it current.
 * Plugins declare their own codes at registration (PluginApi.declareErrors); the built-in endpoint
 * types declare `upstream_error` and `exec_failed` that way.
 */
export interface ErrorCodeDeclaration {
  /** 400-599. */
  status: number;
  /** One sentence for the docs: when a client gets it. */
  meaning: string;
}

export const CORE_ERROR_CODES = {
  invalid_payload: {
    status: 400,
    meaning:
      'The request body or query failed client_filter (or a query parameter of GET admin/audit is invalid), or could not be read; `details` names each field and rule.',
  },
  bad_request: { status: 400, meaning: "A plugin's middleware refused the request with Koa's `ctx.throw(400)`; the message is the middleware's." },
  client_error: {
    status: 400,
    meaning:
      "A plugin's middleware refused the request with Koa's `ctx.throw` and a 4xx status that has no code of its own here (418, 422...): the answer has that status and the middleware's message.",
  },
  invalid_password: { status: 400, meaning: 'A new password is empty or too long (CLI).' },
  invalid_power: { status: 400, meaning: 'A power level is not a whole number (CLI).' },
  invalid_return_to: {
    status: 400,
    meaning: "An OIDC login's return_to is not under one of the provider's allowed return_to prefixes, or is longer than 2 KiB.",
  },
  invalid_state: { status: 400, meaning: 'An OIDC callback whose state is unknown, already used or expired (the sign-in must start again).' },
  invalid_login_code: { status: 400, meaning: 'An OIDC login_code that is unknown, already exchanged or expired (60 s).' },
  unauthorized: { status: 401, meaning: 'No session token, or one that is unknown, expired or logged out.' },
  invalid_signature: {
    status: 401,
    meaning:
      "A call without a credential of an endpoint with `trigger` whose signature is missing, wrong, or too old (more than 5 minutes), or whose trigger's `as` user is gone; the reason is logged, never answered.",
  },
  invalid_credentials: { status: 401, meaning: 'Wrong username or password, or a disabled user (the same answer for all three).' },
  forbidden: {
    status: 403,
    meaning:
      "The caller's power is below what the endpoint or call needs, an API key's scope does not include the toolkit, or an API key was sent where only a session may act.",
  },
  password_login_disabled: { status: 403, meaning: 'auth.password_login is false: people sign in through an identity provider.' },
  not_found: { status: 404, meaning: 'No route at this path.' },
  toolkit_not_found: { status: 404, meaning: 'No enabled toolkit of this name and type.' },
  endpoint_not_found: { status: 404, meaning: 'The toolkit has no endpoint at this path.' },
  provider_not_found: { status: 404, meaning: 'No OIDC provider of this name in auth.oidc.providers.' },
  user_not_found: { status: 404, meaning: 'No user of this name or id.' },
  group_not_found: { status: 404, meaning: 'No core group of this name (CLI).' },
  key_not_found: { status: 404, meaning: "No API key of this id, or (for a caller below auth.admin_power) another user's key." },
  run_not_found: { status: 404, meaning: "No run of this id that the caller may see (another user's run is not found either)." },
  schedule_not_found: { status: 404, meaning: 'No schedule of this id in the live toolkits that the caller may see (docs/schedules.md).' },
  delivery_not_found: { status: 404, meaning: 'No notification delivery of this id (GET {base}/admin/notifications lists them).' },
  method_not_allowed: { status: 405, meaning: 'The endpoint does not accept this method; `Allow` lists those it does.' },
  user_exists: { status: 409, meaning: 'A user of this name already exists (CLI).' },
  group_exists: { status: 409, meaning: 'A core group of this name already exists (CLI).' },
  run_ended: { status: 409, meaning: 'The run has ended already: there is nothing to cancel.' },
  not_rerunnable: {
    status: 409,
    meaning: 'The run cannot be rerun: it has no nodes, has not ended, or has no node the rerun asks for; `details.reason` says which.',
  },
  run_not_pending: {
    status: 409,
    meaning: 'The run is not awaiting approval (approved, rejected, expired, cancelled or started already): there is nothing to decide.',
  },
  already_decided: { status: 409, meaning: 'The caller has approved or rejected this run already: one approver counts once.' },
  too_many_keys: { status: 409, meaning: 'The user has auth.api_keys_per_user live (neither revoked nor expired) API keys already.' },
  request_timeout: { status: 408, meaning: 'The request body did not arrive within server.body_timeout; the connection is closed.' },
  payload_too_large: { status: 413, meaning: 'The body is larger than server.max_body_bytes.' },
  unsupported_media_type: { status: 415, meaning: "A plugin's middleware refused the request's content type (Koa's `ctx.throw(415)`)." },
  rate_limited: {
    status: 429,
    meaning:
      "Too many failed logins for this username and client address, too many OIDC sign-ins started from one client address (60 per 10 minutes), or an endpoint's rate_limit is used up for this window (`RateLimit-Policy` names it); `Retry-After` says when to try again.",
  },
  too_many_sockets: { status: 429, meaning: 'The user has websocket.max_per_user WebSockets open on this instance already.' },
  internal_error: { status: 500, meaning: 'Anything unexpected; the cause is logged with the request id, never shown.' },
  db_context_failed: { status: 500, meaning: 'inject_db_context could not read the database.' },
  choices_failed: {
    status: 502,
    meaning: "The endpoint a field's choices come from (choices_from) failed or answered no list of choices; `details` names the field, the log the cause.",
  },
  unavailable: {
    status: 503,
    meaning:
      'The database refused, failed or did not answer within db.timeout, the rate-limit store did not answer (rate_limits.on_store_failure: deny), or (audit.required) an audited call could not be recorded and was not run; `Retry-After` says when to retry (logout and clear-sessions changed nothing)',
  },
  busy: {
    status: 503,
    meaning:
      'A bounded queue is full (password hashing, commands), a run has as many live output streams as runs.max_followers_per_run allows (or its user as runs.max_followers_per_user), or a login waited too long for the outcome of others of its username; `Retry-After` says when to try again.',
  },
} as const satisfies Record<string, ErrorCodeDeclaration>;

export type CoreErrorCode = keyof typeof CORE_ERROR_CODES;

/** What an error code must look like: a client matches on it, so it is a plain identifier. */
export const ERROR_CODE_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/** Error statuses: a client error or a server error, never a success or a redirect. */
export const isErrorStatus = (status: unknown): status is number => typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599;

/**
 * Which credential a request authenticated with, for logs and the audit trail: a session (`id` = the first 8
 * hex characters of its token hash, enough to follow it, never enough to use it) or an API key (`id` = the
 * key's id), or a schedule's fire (`id` = the schedule's id: docs/schedules.md), or the operator at the server
 * (`cli`: `tkgate runs rerun`, calling as the run's user). Made once per read of the credential, not per request.
 */
export interface Credential {
  readonly kind: 'session' | 'api_key' | 'jwt' | 'schedule' | 'trigger' | 'cli';
  readonly id: string;
}

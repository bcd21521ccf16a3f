import { invalidPayload } from '../errors.js';

/** Names an operator gives on the command line, checked before they reach the database. */
const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const GROUP = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const TOOLKIT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

function check(pattern: RegExp, field: string, value: string, shape: string): void {
  if (!pattern.test(value))
    throw invalidPayload(
      [{ field, rule: 'pattern', message: `${field} ${JSON.stringify(value)} must be ${shape}` }],
      `invalid ${field} ${JSON.stringify(value)}: must be ${shape}`,
    );
}

export const checkUsername = (value: string) => check(USERNAME, 'username', value, '1-64 of letters, digits, . _ @ -');
export const checkGroupName = (field: string, value: string) => check(GROUP, field, value, '1-64 of letters, digits, . _ -');
export const checkToolkitName = (value: string) =>
  check(TOOLKIT_NAME, 'toolkit', value, 'lowercase letters, digits, _ and - (starting with a letter or digit)');

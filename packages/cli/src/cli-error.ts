/** A wrong invocation: printed as one line with a pointer to --help, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

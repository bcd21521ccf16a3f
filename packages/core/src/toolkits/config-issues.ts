/**
 * A problem in one toolkit file, worded once and shown the same way by `config check` (text or JSON), the
 * live reload's log line and a refused start: the file, where in it (line and column from 1, when the text
 * could be read), the key path (e.g. endpoints.0.client_filter.field_rules.q.pattern), the endpoint as
 * `METHOD path` when the problem is inside one, what is wrong and, when it helps, how to fix it.
 */
export interface ToolkitProblem {
  file: string;
  path: string;
  message: string;
  line?: number;
  column?: number;
  endpoint?: string;
  hint?: string;
  /** The lines around a syntax error, for a person at a terminal; never logged (it quotes the file). */
  frame?: string;
}

/** One line: `file:line:column: path (METHOD path): message; hint`. */
export function describeProblem(problem: ToolkitProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}:${problem.column}`;
  const endpoint = problem.endpoint ? ` (${problem.endpoint})` : '';
  return `${where}: ${problem.path || '(file)'}${endpoint}: ${problem.message}${problem.hint ? `; ${problem.hint}` : ''}`;
}

/** The structured fields of a problem, for a log line or `config check --format json`. */
export function problemFields(problem: ToolkitProblem): Record<string, string | number | null> {
  return {
    file: problem.file,
    line: problem.line ?? null,
    column: problem.column ?? null,
    path: problem.path,
    endpoint: problem.endpoint ?? null,
    message: problem.message,
    hint: problem.hint ?? null,
  };
}

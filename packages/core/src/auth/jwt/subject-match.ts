/** Whether a token's `sub` is one of the configured subjects: equal, or beginning with the text before a final `*`. */
export function subjectMatches(subject: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => (pattern.endsWith('*') ? subject.startsWith(pattern.slice(0, -1)) : subject === pattern));
}

import type { z } from 'zod';

/** A list's refinement: each entry's `name` once (`what` words the problem: "provider oidc is listed twice"). */
export const uniqueNames =
  (what: string) =>
  (entries: ReadonlyArray<{ name: string }>, ctx: z.RefinementCtx): void => {
    const seen = new Set<string>();
    entries.forEach((entry, index) => {
      if (seen.has(entry.name)) ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `${what} ${entry.name} is listed twice` });
      seen.add(entry.name);
    });
  };

import type { Database } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { AuthenticatedState } from '../auth/authenticate.js';
import { databaseSpan } from '../tracing/database-span.js';
import type { Stage } from '../http/stage.js';
import type { GroupFound, ToolkitFound } from './pipeline-state.js';

/**
 * Step 6: the caller's group within this toolkit: their toolkit_overrides row, else their core group's
 * jde_associations row, else the toolkit's default_group, else null. One round trip, read fresh.
 */
export function groupStep(db: Database, reads: PreparedReads): Stage<AuthenticatedState & ToolkitFound, GroupFound> {
  const groups = reads.prepare(
    (param) =>
      db.select({
        by_override: db('toolkit_overrides')
          .where({ toolkit: param(0), user_id: param(1) })
          .select('toolkit_group')
          .limit(1, { skipBinding: true }),
        by_association: db('jde_associations')
          .where({ toolkit: param(0), core_group_id: param(2) })
          .select('toolkit_group')
          .limit(1, { skipBinding: true }),
      }),
    { cached: true },
  );
  return (ctx, next) => {
    const { toolkit, caller } = ctx.state;
    const params = [toolkit.name, caller.id, caller.core_group_id ?? -1];
    const settle = (rows: ReadonlyArray<Record<string, unknown>>) => {
      const row = rows[0] as { by_override: string | null; by_association: string | null } | undefined;
      (ctx.state as typeof ctx.state & GroupFound).toolkitGroup = row?.by_override ?? row?.by_association ?? toolkit.defaultGroup;
    };
    const span = databaseSpan(ctx.state.trace, 'group', db);
    // Cached (SQLite, unchanged since read): no promise to wait for.
    const cached = groups.cachedRows(params);
    if (cached) {
      settle(cached);
      span?.setAttribute('tkgate.cached', true);
      span?.end();
      return next();
    }
    if (!span) return groups.all(params).then(settle).then(next);
    return groups
      .all(params)
      .then(settle, (err: unknown) => {
        span.end(err);
        throw err;
      })
      .then(() => span.end())
      .then(next);
  };
}

import type { Database } from '../db/connect.js';
import type { PreparedReads } from '../db/prepared-reads.js';
import type { GatewayMiddleware } from '../http/context.js';

/**
 * Step 6: the caller's group within this toolkit: their toolkit_overrides row, else their core group's
 * jde_associations row, else the toolkit's default_group, else null. One round trip, read fresh.
 */
export function groupStep(db: Database, reads: PreparedReads): GatewayMiddleware {
  const groups = reads.prepare((param) =>
    db.select({
      by_override: db('toolkit_overrides').where({ toolkit: param(0), user_id: param(1) }).select('toolkit_group').limit(1, { skipBinding: true }),
      by_association: db('jde_associations').where({ toolkit: param(0), core_group_id: param(2) }).select('toolkit_group').limit(1, { skipBinding: true }),
    }),
    { cached: true },
  );
  return async (ctx, next) => {
    const toolkit = ctx.state.toolkit!;
    const caller = ctx.state.caller!;
    const [row] = (await groups.all([toolkit.name, caller.id, caller.core_group_id ?? -1])) as Array<{ by_override: string | null; by_association: string | null }>;
    ctx.state.toolkitGroup = row?.by_override ?? row?.by_association ?? toolkit.defaultGroup;
    await next();
  };
}

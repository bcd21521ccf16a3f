import { cliAuditTrail } from '../audit/cli-changes.js';
import type { ServerConfig } from '../config/server-config.js';
import type { Database } from '../db/connect.js';
import type { ToolkitSnapshot } from '../toolkits/toolkit-resolution.js';
import { ApprovalBinding } from './approvals/approval-binding.js';
import { EndpointPlans } from './endpoint-plans.js';
import { RunCommands } from './run-commands.js';
import { runEndings } from './run-endings.js';
import { RunStore } from './run-store.js';
import { RunTransitions } from './run-transitions.js';

/**
 * The run commands of `tkgate runs ...` on the server: the gateway's RunCommands on the database, recorded as CLI
 * changes (actor cli). No run goes on in the CLI: a cancel of a running run is a mark the instance running it
 * sees within a tick. `snapshot`: the toolkits as the gateway loads them, for the definition an approval binds.
 */
export function offlineRunCommands(db: Database, config: ServerConfig, snapshot: ToolkitSnapshot = new Map()): { store: RunStore; commands: RunCommands } {
  const store = new RunStore(db);
  const audit = cliAuditTrail(db);
  const transitions = new RunTransitions(store);
  transitions.onChange(runEndings({ audit, waitForAudit: true }));
  const plans = new EndpointPlans(() => snapshot);
  const binding = new ApprovalBinding({ store, transitions, plans, audit });
  const commands = new RunCommands({ store, transitions, binding, audit, adminPower: config.auth.admin_power, cancelGraceMs: config.runs.cancel_grace_ms });
  return { store, commands };
}

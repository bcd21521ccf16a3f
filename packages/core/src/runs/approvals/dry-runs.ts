import { describeDatabaseError } from '../../db/database-errors.js';
import { scopedLogger, type Logger } from '../../log.js';
import { holdSecretValues } from '../../parameters/index.js';
import type { SecretMask } from '../../secrets/secret-mask.js';
import type { CompiledEndpoint } from '../../toolkits/compiled-toolkit.js';
import type { DryRunRecord, RunStore } from '../run-store.js';
import { settleWithin } from '../settle-within.js';

/** The most a dry run's output shown to approvers holds. */
export const DRY_RUN_OUTPUT_BYTES = 65_536;
/** How long the gateway's stop waits for its dry runs. */
const DRY_RUN_STOP_MS = 5_000;

/**
 * An approval's `dry_run`: it runs at once, with the run's context, through the type's `dryRun`; its masked
 * output (at most 64 KiB) is recorded on the run for the approvers. Stopped with the gateway.
 */
export class DryRuns {
  private readonly going = new Set<Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly store: RunStore,
    private readonly log: Logger,
    /** The gateway's secret mask: the run's secret fields' values are held in it while its dry run goes on. */
    private readonly mask: SecretMask,
  ) {}

  start(id: string, endpoint: CompiledEndpoint, context: Record<string, unknown>): void {
    const log = scopedLogger(this.log, { plugin: endpoint.type.plugin, run_id: id, toolkit: endpoint.toolkit, endpoint: endpoint.path, dry_run: true });
    const release = holdSecretValues(endpoint.clientFilter.secretFields, context.payload, this.mask);
    const done = (async () => {
      let record: DryRunRecord;
      try {
        const outcome = await endpoint.type.dryRun!({
          config: endpoint.typeConfig,
          command: endpoint.approval!.dryRun!,
          context,
          runId: id,
          endpoint: { toolkit: endpoint.toolkit, path: endpoint.path, key: endpoint },
          log,
          maxOutputBytes: DRY_RUN_OUTPUT_BYTES,
          signal: this.stopping.signal,
        });
        const output = Buffer.from(outcome.output, 'utf8');
        record = {
          status: outcome.status,
          exit_code: outcome.exitCode ?? null,
          output: output.length > DRY_RUN_OUTPUT_BYTES ? output.subarray(0, DRY_RUN_OUTPUT_BYTES).toString('utf8') : outcome.output,
        };
      } catch (err) {
        log.error('dry run failed', { error: (err as Error).message });
        record = { status: 'failed', exit_code: null, output: '' };
      }
      await this.store.recordDryRun(id, record).catch((err: unknown) => log.warn('dry run not recorded', describeDatabaseError(err)));
    })().finally(release);
    this.going.add(done);
    void done.finally(() => this.going.delete(done));
  }

  /** The gateway stops: dry runs going on are stopped and waited for a little. */
  async stop(): Promise<void> {
    this.stopping.abort(new Error('the gateway is stopping'));
    await settleWithin(Promise.all([...this.going]), DRY_RUN_STOP_MS);
  }
}

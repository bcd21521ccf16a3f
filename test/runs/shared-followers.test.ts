import { expect } from 'chai';
import { createLogger, RunStore, type OutputChunk } from '@tkgate/core';
import { coreModule } from '../support/core-module.js';
import { dialects } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { withDatabase } from '../support/suite.js';

const { RunFeeds, FOLLOW_POLL_MS } = await coreModule<typeof import('../../packages/core/src/runs/output/run-feeds.js')>('runs/output/run-feeds.js');

/** The store as the feeds use it, counting the reads they make. */
class CountingStore extends RunStore {
  reads = 0;
  override get(id: string) {
    this.reads++;
    return super.get(id);
  }
  override chunksAfter(id: string, after: number) {
    this.reads++;
    return super.chunksAfter(id, after);
  }
}

for (const dialect of dialects) {
  describe(`runs: followers of a run on another instance share one reader (${dialect.name})`, function () {
    this.timeout(30_000);
    const s = withDatabase(dialect, []);

    it('gives 100 followers every chunk once, in order, for the reads of one', async () => {
      const id = 'followed-run-0000000001';
      const now = Date.now();
      await s.bed.db('runs').insert({
        id,
        toolkit: 'ops',
        endpoint: 'x',
        method: 'POST',
        queue: 'q',
        status: 'running',
        actor: 'session',
        view_power: 100,
        cancel_power: 100,
        queued_at: now,
        started_at: now,
        heartbeat_at: now,
      });
      // Another instance writes the output, batch by batch, and ends the run.
      const writer = new RunStore(s.bed.db);
      const store = new CountingStore(s.bed.db);
      const feeds = new RunFeeds(store, createLogger('error'));
      const seen = Array.from({ length: 100 }, () => ({ chunks: [] as OutputChunk[], ended: false }));
      for (const follower of seen)
        feeds.follow(id, 0, { chunk: (chunk) => void follower.chunks.push(chunk), end: () => (follower.ended = true), gone: () => undefined });
      const started = Date.now();
      let seq = 0;
      for (let batch = 0; batch < 5; batch++) {
        await writer.appendChunks(
          id,
          [1, 2, 3].map(() => ({ seq: ++seq, stream: 'stdout' as const, data: `line ${seq}\n` })),
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await s.bed.db('runs').where({ id }).update({ status: 'succeeded', exit_code: 0, ended_at: Date.now() });
      await eventually('every follower has the end', () => seen.every((follower) => follower.ended));
      for (const follower of seen) expect(follower.chunks.map((chunk) => chunk.seq)).to.deep.equal(Array.from({ length: 15 }, (_, i) => i + 1));
      // Two reads per poll (the status, then new chunks) of the one reader, every FOLLOW_POLL_MS at most: what one
      // follower alone costs, whatever the number of followers (a loaded machine polls less often, never more).
      const pollsAtMost = (Date.now() - started) / FOLLOW_POLL_MS + 2;
      expect(store.reads, `${store.reads} reads`).to.be.at.most(2 * pollsAtMost);
      feeds.close();
    });
  });
}

import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { toolkitClient } from '../support/http.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';

/**
 * A pattern's matching cost is its program size times the value's length. A pattern
 * without max_length is run on at most 65,536 characters (a longer value fails it unread), and one whose
 * program is too large for that is refused at load (test/toolkits/broken-files.ts, pattern-cost.yaml).
 */
const kit = {
  name: 'patterns',
  type: 'app',
  endpoints: [
    { path: 'p', method: 'POST', type: 'internal', handler: 'echo', client_filter: { field_rules: { t: { type: 'string', pattern: '^(a|aa)*$' } } } },
  ],
};

for (const dialect of dialects) {
  describe(`field_rules.pattern without max_length (${dialect.name})`, () => {
    const s = withGateway(dialect, [{ username: 'pat' }], {}, { toolkitsDir: toolkitDir({ 'patterns.yaml': kit }) });

    it('fails a value longer than 65,536 characters without matching it, and matches one up to that', async () => {
      const client = toolkitClient(s.gateway.base, await s.login('pat'));
      const long = await client.post('patterns', 'p', { t: 'a'.repeat(100_000) });
      expect(long.status).to.equal(400);
      expect(long.body.error.details).to.deep.equal([
        { field: 't', rule: 'pattern', message: 't is too long to be matched against its pattern (at most 65536 characters)' },
      ]);
      const fits = await client.post('patterns', 'p', { t: 'a'.repeat(65_536) });
      expect(fits.status).to.equal(200);
      expect(fits.body.data.payload.t).to.have.length(65_536);
    });
  });
}

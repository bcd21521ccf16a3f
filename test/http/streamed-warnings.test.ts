import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { withGateway } from '../support/suite.js';
import { toolkitDir } from '../support/toolkit-files.js';
import { runConfig, transportRuns } from './transport-runs.js';

/**
 * A streamed response must not make the process warn (MaxListenersExceededWarning: a library's
 * stream piped to the client left eleven close listeners on the response), whichever transport streams it.
 */
const BIG = 1024 * 1024;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/chunked') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      let left = 16;
      const next = () => {
        if (left-- === 0) return void res.end();
        res.write(Buffer.alloc(64 * 1024, 'x'), () => setImmediate(next));
      };
      return next();
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BIG });
    res.end(Buffer.alloc(BIG, 'x'));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
after(() => server.close());

const toolkit = {
  name: 'streams',
  type: 'app',
  endpoints: ['length', 'chunked'].map((name) => ({
    path: name,
    method: 'GET',
    type: 'http',
    upstream: { url: `${base}/${name}`, timeout: '5s', passthrough: true },
  })),
};

// The default run (the reader for passthrough) and the two libraries' streams.
for (const run of [transportRuns[0]!, ...transportRuns.filter((one) => one.passthrough !== 'reader')]) {
  describe(`streamed responses make no process warning (${run.name}, passthrough through ${run.passthrough})`, () => {
    const s = withGateway(run.dialect, [{ username: 'xavi', power: 7 }], runConfig(run), { toolkitsDir: toolkitDir({ 'streams.yaml': toolkit }) });
    it('serves downloads, one after another on one client connection, without a MaxListenersExceededWarning', async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on('warning', onWarning);
      try {
        const token = await s.login('xavi');
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const download = (name: string, slow = false) =>
          new Promise<number>((resolve, reject) => {
            http
              .get(`${s.gateway.base}/tk/app/streams/${name}`, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
                let size = 0;
                res.on('data', (chunk: Buffer) => {
                  size += chunk.length;
                  if (slow) {
                    res.pause();
                    setTimeout(() => res.resume(), 1);
                  }
                });
                res.on('end', () => resolve(size));
                res.on('error', reject);
              })
              .on('error', reject);
          });
        for (let i = 0; i < 6; i++) expect(await download(i % 2 ? 'length' : 'chunked', i % 3 === 0)).to.be.greaterThan(0);
        agent.destroy();
        await new Promise((resolve) => setTimeout(resolve, 200));
      } finally {
        process.off('warning', onWarning);
      }
      expect(warnings.map((warning) => `${warning.name}: ${warning.message}`)).to.deep.equal([]);
    });
  });
}

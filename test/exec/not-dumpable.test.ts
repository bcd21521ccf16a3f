import { chmodSync, existsSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { dialects } from '../support/databases.js';
import { scriptWriter } from '../support/executables.js';
import { addUsers, createTestbed, passwordOf, type Testbed } from '../support/fixtures.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { loginToken, toolkitClient } from '../support/http.js';
import { tempDir } from '../support/paths.js';
import { toolkitDir } from '../support/toolkit-files.js';

/** The user the gateway runs as here: not root, whom no file mode stops. */
const NOBODY = { uid: 65534, gid: 65534 };
/** A variable of the gateway's environment that is none of its configuration's, so `tkgate start` leaves it in place. */
const MARKER = 'marker-5d2c-cloud-key';

const scripts = scriptWriter('tkgate-not-dumpable-bin-');
/** Every environment of a process this command's user may read: where the marker is found. The brackets keep it out of grep's own argv. */
const scan = scripts('scan', ['grep -a -o -H -e "[^[:cntrl:]]*marker-5d2c-cloud-ke[y][^[:cntrl:]]*" /proc/[0-9]*/environ 2>/dev/null', 'true'].join('\n'));

// The gateway's own processes, not the database's: one dialect is enough.
for (const workers of [1, 2])
  describe(`exec commands cannot read the gateway's environment through /proc, server.workers ${workers} (${dialects[0]!.name})`, function () {
    this.timeout(60_000);
    let bed: Testbed;
    let gateway: GatewayProcess;
    before(async function () {
      if (process.platform !== 'linux' || process.getuid?.() !== 0) this.skip(); // it starts the gateway as another user
      bed = await createTestbed(dialects[0]!);
      await addUsers(bed.db, [{ username: 'yara', power: 3 }]);
      const filename = bed.dbConfig.filename as string | undefined;
      if (filename) {
        chmodSync(path.dirname(filename), 0o777);
        for (const file of [filename, `${filename}-wal`, `${filename}-shm`]) if (existsSync(file)) chmodSync(file, 0o666);
      }
      const toolkits = toolkitDir({
        'helpers.yaml': { name: 'helpers', type: 'app', endpoints: [{ path: 'scan', method: 'GET', type: 'exec', command: [scan], timeout: '30s' }] },
      });
      const cwd = tempDir();
      for (const dir of [toolkits, cwd, path.dirname(scan)]) chmodSync(dir, 0o755);
      gateway = await startGateway({
        config: { db: bed.dbConfig, toolkits: { dir: toolkits, watch: false }, server: { port: 0, workers } },
        env: { TKGATE_TEST_CLOUD_KEY: MARKER },
        cwd,
        user: NOBODY,
      });
    });
    after(async () => {
      await gateway?.stop();
      await bed?.close();
    });

    it("a command running as the gateway's user finds no variable of the gateway in any /proc/<pid>/environ", async () => {
      const c = toolkitClient(gateway.base, await loginToken(gateway.base, 'yara', passwordOf('yara')));
      const reply = await c.get('helpers', 'scan');
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      expect(reply.body.data, 'where the marker was found').to.deep.equal({ output: '' });
      expect(gateway.logs.filter((line) => String(line.msg).includes('stays dumpable'))).to.deep.equal([]);
    });
  });

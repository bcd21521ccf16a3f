import type { DialectTarget } from './databases.js';
import { addUsers, createTestbed, passwordOf, type Testbed } from './fixtures.js';
import { startInProcess } from './gateway-in-process.js';
import { startGateway, type GatewayProcess } from './gateway-process.js';
import { authClient, loginToken } from './http.js';
import { pluginsWithTestFunctions } from './toolkit-files.js';

type UserSpec = Array<{ username: string; power?: number; group?: string }>;

/** A migrated database with users, made before the suite's tests and dropped after them. */
export interface DatabaseSuite {
  bed: Testbed;
  ids: Record<string, number>;
}

export function withDatabase(dialect: DialectTarget, users: UserSpec): DatabaseSuite {
  const suite = {} as DatabaseSuite;
  before(() => fillDatabase(suite, dialect, users));
  after(() => suite.bed?.close());
  return suite;
}

async function fillDatabase(suite: DatabaseSuite, dialect: DialectTarget, users: UserSpec): Promise<void> {
  suite.bed = await createTestbed(dialect);
  suite.ids = await addUsers(suite.bed.db, users);
}

/** The same, plus one running gateway on it for the whole suite. */
export interface GatewaySuite extends DatabaseSuite {
  gateway: GatewayProcess;
  auth: ReturnType<typeof authClient>;
  /** Logs a fixture user in; the password is passwordOf(username). */
  login(username: string): Promise<string>;
}

export interface GatewayOptions {
  /** Runs on the migrated database before the gateway starts (toolkit tables, fixtures). */
  prepare?: (db: Testbed['db']) => Promise<void>;
  /** The toolkit directory (see toolkit-files.ts); the gateway watches it. */
  toolkitsDir?: string;
  /** Extra environment variables of the gateway process (implies `process`). */
  env?: Record<string, string>;
  /**
   * A real `tkgate start` child process rather than a gateway inside the test process: for suites that
   * need the process (signals, exit codes, stdout and stderr, `child`, environment variables). Implied by
   * `env` and by `server.workers` > 1.
   */
  process?: boolean;
}

/** Whether the suite's gateway must be a child process (see GatewayOptions.process). */
function needsProcess(config: Record<string, unknown>, options: GatewayOptions): boolean {
  const workers = (config.server as { workers?: number } | undefined)?.workers ?? 1;
  return options.process === true || options.env !== undefined || workers > 1;
}

export function withGateway(dialect: DialectTarget, users: UserSpec, config: Record<string, unknown> = {}, options: GatewayOptions = {}): GatewaySuite {
  const suite = {} as GatewaySuite;
  before(async () => {
    await fillDatabase(suite, dialect, users);
    await options.prepare?.(suite.bed.db);
    const toolkits = options.toolkitsDir ? { toolkits: { dir: options.toolkitsDir, watch: true }, plugins: pluginsWithTestFunctions } : {};
    const gatewayConfig = { ...toolkits, ...config, db: suite.bed.dbConfig };
    suite.gateway = needsProcess(config, options)
      ? await startGateway({ config: gatewayConfig, env: options.env })
      : await startInProcess({ config: gatewayConfig });
    suite.auth = authClient(suite.gateway.base);
    suite.login = (username) => loginToken(suite.gateway.base, username, passwordOf(username));
  });
  after(async () => {
    await suite.gateway?.stop();
    await suite.bed?.close();
  });
  return suite;
}

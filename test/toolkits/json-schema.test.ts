import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import YAML from 'yaml';
import { disabled, library, shop } from '../pipeline/shop-toolkit.js';
import { runCli } from '../support/cli.js';
import { dialects } from '../support/databases.js';
import { writeConfig } from '../support/gateway-process.js';
import { repoRoot } from '../support/paths.js';
import { withGateway } from '../support/suite.js';
import { toolkitDir, type ToolkitDoc } from '../support/toolkit-files.js';

/** `tkgate schema`: editors validate toolkit files with it as `config check` would, key for key. */
const DEFAULT_PLUGINS = ['@tkgate/plugin-internal', '@tkgate/plugin-http', '@tkgate/plugin-exec', '@tkgate/plugin-ssh'];
const staticPlugin = path.join(repoRoot, 'docs/examples/static-plugin.js');
const redisPlugin = path.join(repoRoot, 'examples/plugin-redis/dist/index.js');
const committedSchema = path.join(repoRoot, 'config/toolkit.schema.json');

async function printSchema(plugins: string[]): Promise<Record<string, any>> {
  // A database that cannot be reached: the schema needs none.
  const config = writeConfig({ db: { client: 'mysql', url: 'mysql://nobody@127.0.0.1:9/none' }, plugins });
  const result = await runCli(['schema', '--config', config]);
  expect(result.code, result.stderr).to.equal(0);
  return JSON.parse(result.stdout);
}

const compile = (schema: object): ValidateFunction => new Ajv2020({ allErrors: true, allowUnionTypes: true, validateFormats: false }).compile(schema);

/** The key paths ajv reports as unknown, dotted like config check's (endpoints.0.methdo). */
function unknownKeys(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).flatMap((error) => {
    const key =
      (error.params as { unevaluatedProperty?: string; additionalProperty?: string }).unevaluatedProperty ??
      (error.params as { additionalProperty?: string }).additionalProperty;
    return key === undefined ? [] : [[...error.instancePath.split('/').slice(1), key].join('.')];
  });
}

/** Every property schema in the tree, with where it is, for the description check. */
function* properties(schema: unknown, at: string): Generator<[string, Record<string, unknown>]> {
  if (Array.isArray(schema)) {
    for (const [index, item] of schema.entries()) yield* properties(item, `${at}[${index}]`);
    return;
  }
  if (schema === null || typeof schema !== 'object') return;
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties') {
      for (const [name, property] of Object.entries(value as Record<string, Record<string, unknown>>)) {
        yield [`${at}.${name}`, property];
        yield* properties(property, `${at}.${name}`);
      }
    } else if (key !== 'if') {
      yield* properties(value, `${at}.${key}`);
    }
  }
}

/** The YAML examples of a Markdown file: whole toolkit files, and endpoint fragments (`type: …` with its keys), made whole. */
function markdownExamples(file: string): Array<[string, unknown]> {
  const blocks = [...readFileSync(file, 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => YAML.parse(match[1]!) as Record<string, unknown>);
  return blocks.map((block, index) => {
    const where = `${path.relative(repoRoot, file)} yaml block ${index + 1}`;
    if ('endpoints' in block) return [where, block];
    return [where, { name: 'example', type: 'app', endpoints: [{ path: 'example', method: 'GET', ...block }] }];
  });
}

describe('tkgate schema: the JSON Schema of toolkit files', function () {
  this.timeout(60_000);
  let schema: Record<string, any>;
  let validate: ValidateFunction;
  before(async () => {
    schema = await printSchema([...DEFAULT_PLUGINS, staticPlugin, redisPlugin]);
    validate = compile(schema);
  });

  it("is JSON Schema 2020-12 with a description on every key, including each loaded plugin's keys", () => {
    expect(schema.$schema).to.equal('https://json-schema.org/draft/2020-12/schema');
    const endpoint = schema.properties.endpoints.items;
    expect(endpoint.properties.type.enum).to.deep.equal(['internal', 'http', 'exec', 'ssh', 'static', 'redis']);
    const staticKeys = endpoint.allOf.find((branch: any) => branch.if.properties.type.const === 'static').then.properties;
    expect(Object.keys(staticKeys)).to.deep.equal(['value', 'by_group']);
    const undescribed = [...properties(schema, '')]
      .filter(([, property]) => typeof property.description !== 'string' || property.description === '')
      .map(([where]) => where);
    expect(undescribed).to.deep.equal([]);
  });

  it("accepts every toolkit file of the repository, the docs' examples and the test suite's toolkits", () => {
    const examples: Array<[string, unknown]> = [];
    const configDir = path.join(repoRoot, 'config/toolkits');
    for (const file of readdirSync(configDir)) examples.push([`config/toolkits/${file}`, YAML.parse(readFileSync(path.join(configDir, file), 'utf8'))]);
    for (const doc of ['docs/toolkits.md', 'docs/plugins.md', 'docs/runs.md', 'README.md']) examples.push(...markdownExamples(path.join(repoRoot, doc)));
    for (const toolkit of [shop, disabled, library]) examples.push([`test/pipeline/shop-toolkit.ts ${toolkit.name}`, toolkit]);
    expect(examples.length).to.be.greaterThan(6);
    for (const [where, document] of examples) {
      expect(validate(document), `${where}: ${JSON.stringify(validate.errors)}`).to.equal(true);
    }
  });

  it('is committed as config/toolkit.schema.json for the built-in types, which notes.yaml names for editors', async () => {
    const builtIn = await printSchema(DEFAULT_PLUGINS);
    expect(JSON.parse(readFileSync(committedSchema, 'utf8')), 'regenerate: npm run -s tkgate -- schema > config/toolkit.schema.json').to.deep.equal(builtIn);
    expect(readFileSync(path.join(repoRoot, 'config/toolkits/notes.yaml'), 'utf8')).to.match(/^# yaml-language-server: \$schema=\.\.\/toolkit\.schema\.json\n/);
    expect(readFileSync(path.join(repoRoot, 'docs/toolkits.md'), 'utf8')).to.include('# yaml-language-server: $schema=');
    // Installed with the CLI at a stable path, node_modules/@tkgate/cli/schema/toolkit.schema.json: a copy of the
    // committed one made when the package is packed (test/release/ and test/plugins/packages.test.ts read it there).
    const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'packages/cli/package.json'), 'utf8'));
    expect(manifest.scripts.prepack).to.equal('node ../../scripts/release/cli-schema.js');
    expect(manifest.files).to.include('schema');
    expect(manifest.exports['./schema/toolkit.schema.json']).to.equal('./schema/toolkit.schema.json');
  });

  /** Misspelt keys at every level: each file has one, at the key path config check names. */
  const typos: Record<string, [ToolkitDoc, string]> = {
    'top.yaml': [{ name: 'top', type: 'app', enabeld: true, endpoints: [{ path: 'a', method: 'GET', type: 'internal', handler: 'x' }] }, 'enabeld'],
    'core.yaml': [
      { name: 'core', type: 'app', endpoints: [{ path: 'a', methdo: 'GET', method: 'GET', type: 'internal', handler: 'x' }] },
      'endpoints.0.methdo',
    ],
    'rule.yaml': [
      {
        name: 'rule',
        type: 'app',
        endpoints: [{ path: 'a', method: 'GET', type: 'internal', handler: 'x', client_filter: { field_rules: { q: { type: 'string', max_lenght: 3 } } } }],
      },
      'endpoints.0.client_filter.field_rules.q.max_lenght',
    ],
    'http.yaml': [
      { name: 'web', type: 'app', endpoints: [{ path: 'a', method: 'GET', type: 'http', upstream: { url: 'http://127.0.0.1:9/', timout: '1s' } }] },
      'endpoints.0.upstream.timout',
    ],
    'exec.yaml': [
      { name: 'run', type: 'app', endpoints: [{ path: 'a', method: 'GET', type: 'exec', command: ['/bin/true'], max_ouput_bytes: 10 }] },
      'endpoints.0.max_ouput_bytes',
    ],
    'query.yaml': [
      {
        name: 'query',
        type: 'app',
        endpoints: [{ path: 'a', method: 'GET', type: 'internal', pseudo_querys: [{ select: 'users', columns: ['id'], limt: 5 }] }],
      },
      'endpoints.0.pseudo_querys.0.limt',
    ],
  };

  it('refuses a misspelt key in an editor at the key path config check names', () => {
    for (const [file, [document, key]] of Object.entries(typos)) {
      expect(validate(document), file).to.equal(false);
      expect(unknownKeys(validate.errors), file).to.include(key);
    }
    const ok = { name: 'fine', type: 'app', endpoints: [{ path: 'a', method: 'GET', type: 'internal', handler: 'x' }] };
    expect(validate(ok), JSON.stringify(validate.errors)).to.equal(true);
    expect(validate({ ...ok, endpoints: [{ ...ok.endpoints[0], type: 'nosuchtype' }] }), 'an unknown endpoint type').to.equal(false);
  });

  for (const dialect of dialects) {
    it(`config check refuses the same keys (${dialect.name})`, async () => {
      const target = await dialect.create();
      try {
        const dir = toolkitDir(Object.fromEntries(Object.entries(typos).map(([file, [document]]) => [file, document])));
        const result = await runCli(['config', 'check', dir, '--config', writeConfig({ db: target.dbConfig })]);
        expect(result.code).to.equal(1);
        for (const [file, [, key]] of Object.entries(typos)) {
          const line = new RegExp(`^${file.replace('.', '\\.')}:\\d+:\\d+: ${key.replace(/\./g, '\\.')}( \\(GET a\\))?: unknown key`);
          expect(
            result.stdout.split('\n').some((printed) => line.test(printed)),
            `${file}\n${result.stdout}`,
          ).to.equal(true);
        }
      } finally {
        await target.drop();
      }
    });
  }
});

for (const dialect of dialects) {
  describe(`GET {base}/toolkit.schema.json (${dialect.name})`, () => {
    const s = withGateway(dialect, []);

    it('serves the schema of the loaded plugins without a session, for editors pointed at the gateway', async () => {
      const reply = await fetch(`${s.gateway.base}/toolkit.schema.json`);
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('content-type')).to.equal('application/schema+json');
      expect(await reply.json()).to.deep.equal(JSON.parse(readFileSync(committedSchema, 'utf8')));
      const post = await fetch(`${s.gateway.base}/toolkit.schema.json`, { method: 'POST' });
      expect(post.status).to.equal(405);
    });
  });
}

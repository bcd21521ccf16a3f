import { SecretMask } from './secret-mask.js';
import { isSecretReference, splitReference, type SecretReference } from './secret-reference.js';
import { envScheme, fileScheme, SecretUnavailable, type SecretPlace, type SecretScheme, type SecretSource } from './secret-schemes.js';

const SCHEME_NAME = /^[a-z][a-z0-9+.-]*$/;

/** A reference found in an endpoint's configuration: where (relative to the endpoint) and why it was refused. */
export interface SecretProblem {
  path: Array<string | number>;
  message: string;
}

/**
 * A gateway's secrets: the schemes (built-in and plugins'), the references its toolkit files opened, and the
 * mask of every value handed out. Values live here only: toolkits hold references, plugins ask per call.
 */
export class Secrets {
  private readonly schemes = new Map<string, { scheme: SecretScheme; plugin: string }>();
  /** The source of each reference object of a loaded endpoint configuration. */
  private readonly sources = new WeakMap<SecretReference, SecretSource>();
  readonly mask = new SecretMask();

  constructor(environment: Readonly<Record<string, string | undefined>> = { ...process.env }) {
    this.addScheme(envScheme(environment), 'tkgate');
    this.addScheme(fileScheme, 'tkgate');
  }

  addScheme(scheme: SecretScheme, plugin: string): void {
    if (!scheme || typeof scheme.open !== 'function' || typeof scheme.name !== 'string' || !SCHEME_NAME.test(scheme.name))
      throw new Error(`plugin ${plugin}: a secret scheme needs { name (matching [a-z][a-z0-9+.-]*), open(reference, place) }`);
    const taken = this.schemes.get(scheme.name);
    if (taken) throw new Error(`plugin ${plugin}: secret scheme ${scheme.name} is already registered by ${taken.plugin}`);
    this.schemes.set(scheme.name, { scheme, plugin });
  }

  schemeNames(): string[] {
    return [...this.schemes.keys()];
  }

  /**
   * Opens every `{ secret }` object of a validated endpoint configuration; each one that cannot be opened is a
   * problem naming the reference. Called at load, before the endpoint goes live.
   */
  async openAll(config: unknown, place: SecretPlace): Promise<SecretProblem[]> {
    const problems: SecretProblem[] = [];
    for (const { reference, at } of referencesIn(config)) {
      const problem = await this.open(reference, place);
      if (problem) problems.push({ path: at, message: problem });
    }
    return problems;
  }

  private async open(reference: SecretReference, place: SecretPlace): Promise<string | undefined> {
    const parts = splitReference(reference.secret);
    const named = parts && this.schemes.get(parts.scheme);
    if (!parts || !named) return `secret ${reference.secret}: unknown scheme (known: ${this.schemeNames().join(', ')})`;
    let source: SecretSource;
    try {
      source = await named.scheme.open(parts.rest, place);
      if (!source || typeof source.read !== 'function') throw new Error(`scheme ${parts.scheme} of plugin ${named.plugin} returned no { read() }`);
      this.mask.add(source.read());
    } catch (err) {
      // A plugin's message is its own; core's name the reference only. Neither is trusted to be value-free: masked.
      const why = err instanceof SecretUnavailable ? err.message : `scheme ${parts.scheme} refused it: ${(err as Error)?.message ?? String(err)}`;
      return `secret ${reference.secret}: ${this.mask.mask(why)}`;
    }
    this.sources.set(reference, source);
    return undefined;
  }

  /** The current value of a reference of a loaded endpoint's configuration (a new value is added to the mask). */
  value(reference: SecretReference): string {
    const source = this.sources.get(reference);
    if (!source) throw new Error(`secret ${String(reference?.secret)} is not a reference of a loaded toolkit file`);
    const value = source.read();
    this.mask.add(value);
    return value;
  }
}

/** Every `{ secret }` object in a configuration, with its key path. */
function referencesIn(value: unknown, at: Array<string | number> = [], found: Array<{ reference: SecretReference; at: Array<string | number> }> = []) {
  if (isSecretReference(value)) found.push({ reference: value, at });
  else if (value !== null && typeof value === 'object' && at.length < 32)
    for (const [key, inner] of Object.entries(value)) referencesIn(inner, [...at, Array.isArray(value) ? Number(key) : key], found);
  return found;
}

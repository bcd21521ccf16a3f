import type { EndpointType, NamedFunction } from './plugin-api.js';

/** The endpoint types and named functions that loaded plugins registered. */
export class EndpointTypes {
  private readonly types = new Map<string, EndpointType<unknown>>();
  private readonly functions = new Map<string, NamedFunction>();

  addType(type: EndpointType<unknown>, plugin: string): void {
    if (!/^[a-z][a-z0-9_-]*$/.test(type.type)) throw new Error(`plugin ${plugin}: endpoint type name ${JSON.stringify(type.type)} must match [a-z][a-z0-9_-]*`);
    if (this.types.has(type.type)) throw new Error(`plugin ${plugin}: endpoint type ${type.type} is already registered`);
    this.types.set(type.type, type);
  }

  addFunction(name: string, fn: NamedFunction, plugin: string): void {
    if (typeof fn !== 'function') throw new Error(`plugin ${plugin}: function ${name} is not a function`);
    if (this.functions.has(name)) throw new Error(`plugin ${plugin}: function ${name} is already registered`);
    this.functions.set(name, fn);
  }

  type(name: string): EndpointType<unknown> | undefined {
    return this.types.get(name);
  }

  typeNames(): string[] {
    return [...this.types.keys()];
  }

  fn(name: string): NamedFunction | undefined {
    return this.functions.get(name);
  }

  functionNames(): ReadonlySet<string> {
    return new Set(this.functions.keys());
  }
}

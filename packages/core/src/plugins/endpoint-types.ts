import { CORE_ERROR_CODES, ERROR_CODE_PATTERN, isErrorStatus, type ErrorCodeDeclaration } from '../error-codes.js';
import { scopedLogger } from '../log.js';
import { Secrets } from '../secrets/secrets.js';
import type { EndpointType, FunctionCall, NamedFunction } from './plugin-api.js';

/** The call as the function's plugin sees it: the same, with log lines naming that plugin. */
function rescoped(call: FunctionCall, plugin: string): FunctionCall {
  let log: FunctionCall['log'] | undefined;
  return {
    context: call.context,
    requestId: call.requestId,
    get signal() {
      return call.signal;
    },
    db: call.db,
    trace: call.trace,
    get log() {
      return (log ??= scopedLogger(call.log, { plugin }));
    },
  };
}

/** An endpoint type as core holds it: the plugin's object, and the name of the plugin that registered it. */
export interface RegisteredType extends EndpointType<unknown> {
  readonly plugin: string;
  /** Whether core or a plugin declared this error code (an undeclared one is answered, and logged once). */
  readonly knowsErrorCode: (code: string) => boolean;
}

/** A plugin's error code: its declaration and who declared it. */
export interface PluginErrorCode extends ErrorCodeDeclaration {
  plugin: string;
}

/** The endpoint types, named functions and error codes that loaded plugins registered. */
export class EndpointTypes {
  private readonly types = new Map<string, RegisteredType>();
  private readonly functions = new Map<string, NamedFunction>();
  private readonly errorCodes = new Map<string, PluginErrorCode>();

  /** The secret schemes plugins registered beside env: and file:, and the references toolkit files opened. */
  constructor(readonly secrets = new Secrets()) {}

  addType(type: EndpointType<unknown>, plugin: string): void {
    if (!type || typeof type !== 'object' || typeof type.execute !== 'function')
      throw new Error(`plugin ${plugin}: an endpoint type needs { type, configSchema, execute }`);
    if (typeof type.type !== 'string' || !/^[a-z][a-z0-9_-]*$/.test(type.type))
      throw new Error(`plugin ${plugin}: endpoint type name ${JSON.stringify(type.type)} must match [a-z][a-z0-9_-]*`);
    if (this.types.has(type.type)) throw new Error(`plugin ${plugin}: endpoint type ${type.type} is already registered`);
    // The plugin's own object stays the prototype, so its methods see `this` as they wrote it.
    const knowsErrorCode = (code: string) => code in CORE_ERROR_CODES || this.errorCodes.has(code);
    this.types.set(
      type.type,
      Object.create(type, { plugin: { value: plugin, enumerable: true }, knowsErrorCode: { value: knowsErrorCode } }) as RegisteredType,
    );
  }

  addFunction(name: string, fn: NamedFunction, plugin: string): void {
    if (typeof fn !== 'function') throw new Error(`plugin ${plugin}: function ${name} is not a function`);
    if (this.functions.has(name)) throw new Error(`plugin ${plugin}: function ${name} is already registered`);
    // The caller (e.g. `type: internal`) scopes call.log to itself; the function's lines name its own plugin.
    this.functions.set(name, (call) => fn(rescoped(call, plugin)));
  }

  /** A plugin's own error codes; refused when a code is malformed or taken with another status. */
  addErrorCodes(codes: Readonly<Record<string, ErrorCodeDeclaration>>, plugin: string): void {
    if (!codes || typeof codes !== 'object') throw new Error(`plugin ${plugin}: declareErrors takes { code: { status, meaning } }`);
    for (const [code, declared] of Object.entries(codes)) {
      if (!ERROR_CODE_PATTERN.test(code)) throw new Error(`plugin ${plugin}: error code ${JSON.stringify(code)} must match [a-z][a-z0-9_]*`);
      if (!isErrorStatus(declared?.status))
        throw new Error(`plugin ${plugin}: error code ${code} has status ${JSON.stringify(declared?.status)}; it must be a whole number from 400 to 599`);
      if (typeof declared.meaning !== 'string' || declared.meaning.trim() === '')
        throw new Error(`plugin ${plugin}: error code ${code} needs a meaning (one sentence for the docs)`);
      const core = (CORE_ERROR_CODES as Record<string, ErrorCodeDeclaration>)[code];
      const taken = core ? { ...core, plugin: 'tkgate' } : this.errorCodes.get(code);
      if (taken && taken.status !== declared.status) {
        throw new Error(`plugin ${plugin}: error code ${code} is already declared by ${taken.plugin} with status ${taken.status}`);
      }
      if (!taken) this.errorCodes.set(code, { status: declared.status, meaning: declared.meaning, plugin });
    }
  }

  /** Codes declared by plugins (core's are in error-codes.ts). */
  declaredErrorCodes(): ReadonlyMap<string, PluginErrorCode> {
    return this.errorCodes;
  }

  type(name: string): RegisteredType | undefined {
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

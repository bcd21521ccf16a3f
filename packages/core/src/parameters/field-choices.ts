import { coreError, type FieldProblem } from '../errors.js';
import type { ChoiceArg, CompiledChoicesFrom } from './choices-from.js';

/** One choice of a field: the value a call may send, and what a form shows for it. */
export interface Choice {
  value: string | number | boolean;
  label: string;
}

/**
 * A call of one of the gateway's own toolkit endpoints, made as `as` (auth/internal-calls.ts's InternalCall is it,
 * with its caller): declared here, the lower layer, so that a field's choices can be fetched through it.
 */
export interface EndpointCall<As> {
  kind: string;
  toolkit: string;
  /** The endpoint path as a client sends it (a template's values filled in), without the leading `/`. */
  path: string;
  method: string;
  /** The JSON body of a POST, PUT or PATCH. */
  payload?: Readonly<Record<string, unknown>>;
  /** The query string's parameters (a GET's payload). */
  query?: Readonly<Record<string, string>>;
  as: As;
  /** The request id of the request or fire the call is made for (X-Request-Id: the access lines and the run link them). */
  requestId?: string;
}

export interface ChoicesCaller<As> {
  call(call: EndpointCall<As>): Promise<{ status: number; body: unknown }>;
}

/** Who asks: the identity the call is made as, and the key its choices are cached under (one per caller and credential). */
export interface ChoicesAsker<As> {
  key: string;
  as: As;
  requestId?: string;
}

/** The toolkit the field's endpoint belongs to, as the request found it. */
export interface ChoicesToolkit {
  name: string;
  kind: string;
  routes: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
}

/** The most choices one field may have: a longer list is the choices endpoint's failure (a form cannot show it either). */
export const MAX_CHOICES = 1000;
/** Lists kept at once (callers times args); the oldest goes first. */
export const MAX_CACHED_LISTS = 500;

type ArgValues = Record<string, string | number | boolean>;

/** The args of a field's choices call from a payload, or the field an arg needs that the payload does not have. */
export function choiceArgs(rule: CompiledChoicesFrom, values: Readonly<Record<string, unknown>>): { args: ArgValues } | { missing: string } {
  const args: ArgValues = {};
  for (const [name, arg] of rule.args) {
    const value = argValue(arg, values);
    if (value === undefined) return { missing: (arg as { field: string }).field };
    args[name] = value;
  }
  return { args };
}

function argValue(arg: ChoiceArg, values: Readonly<Record<string, unknown>>): string | number | boolean | undefined {
  if ('fixed' in arg) return arg.fixed;
  const value = values[arg.field];
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : undefined;
}

/** Whether `value` is one of the choices; a query string's "3" is the choice 3. */
export function isChoice(choices: readonly Choice[], value: unknown): boolean {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return false;
  return choices.some((choice) => choice.value === value || String(choice.value) === String(value));
}

/** A field whose choices could not be read: 502 choices_failed, naming the field; the cause goes to the log only. */
function choicesFailed(field: string, why: string, cause?: unknown) {
  const problem: FieldProblem = { field, rule: 'choices_from', message: `${field}: its choices could not be read (${why})` };
  return coreError('choices_failed', `the choices of ${field} could not be read`, { details: [problem], cause });
}

interface CachedList {
  expires: number;
  choices: readonly Choice[];
}

/**
 * The choices of fields with choices_from, asked of their endpoint as the caller through the one Koa stack (so the
 * endpoint's permissions, rows and rate limits are the caller's), and kept per caller and args for the rule's
 * `cache` in a bounded map.
 */
export class FieldChoices<As> {
  private readonly cached = new Map<string, CachedList>();
  /** A number per toolkit version: a reload's lists are its own (the old ones age out), never the last version's. */
  private readonly versions = new WeakMap<ChoicesToolkit, number>();
  private nextVersion = 0;

  constructor(private readonly caller: ChoicesCaller<As>) {}

  async choices(toolkit: ChoicesToolkit, field: string, rule: CompiledChoicesFrom, args: ArgValues, asker: ChoicesAsker<As>): Promise<readonly Choice[]> {
    const key =
      rule.cacheMs > 0
        ? JSON.stringify([asker.key, toolkit.name, this.versionOf(toolkit), rule.endpoint, rule.query ?? null, rule.value ?? null, rule.label ?? null, args])
        : undefined;
    if (key !== undefined) {
      const hit = this.cached.get(key);
      if (hit && hit.expires > Date.now()) return hit.choices;
      if (hit) this.cached.delete(key);
    }
    const choices = await this.ask(toolkit, field, rule, args, asker);
    if (key !== undefined) {
      if (this.cached.size >= MAX_CACHED_LISTS) this.cached.delete(this.cached.keys().next().value!);
      this.cached.set(key, { expires: Date.now() + rule.cacheMs, choices });
    }
    return choices;
  }

  private versionOf(toolkit: ChoicesToolkit): number {
    let version = this.versions.get(toolkit);
    if (version === undefined) this.versions.set(toolkit, (version = this.nextVersion++));
    return version;
  }

  private async ask(toolkit: ChoicesToolkit, field: string, rule: CompiledChoicesFrom, args: ArgValues, asker: ChoicesAsker<As>): Promise<Choice[]> {
    const methods = toolkit.routes.get(rule.endpoint);
    if (!methods) throw choicesFailed(field, `${rule.endpoint} is not live`);
    const get = methods.has('GET');
    let answer: { status: number; body: unknown };
    try {
      answer = await this.caller.call({
        kind: toolkit.kind,
        toolkit: toolkit.name,
        path: rule.endpoint,
        method: get ? 'GET' : 'POST',
        ...(get ? { query: Object.fromEntries(Object.entries(args).map(([name, value]) => [name, String(value)])) } : { payload: args }),
        as: asker.as,
        ...(asker.requestId !== undefined && { requestId: asker.requestId }),
      });
    } catch (err) {
      throw choicesFailed(field, `${rule.endpoint} could not be called`, err);
    }
    if (answer.status !== 200) {
      const code = (answer.body as { error?: { code?: unknown } } | undefined)?.error?.code;
      throw choicesFailed(field, `${rule.endpoint} answered ${answer.status}${typeof code === 'string' ? ` ${code}` : ''}`);
    }
    return choicesIn(field, rule, (answer.body as { data?: unknown } | undefined)?.data);
  }
}

/** The choices in an endpoint's `data`: an array of rows or values, `{rows}`, or with `query` the named query's rows. */
function choicesIn(field: string, rule: CompiledChoicesFrom, data: unknown): Choice[] {
  let rows = rule.query !== undefined && isObject(data) ? data[rule.query] : data;
  if (isObject(rows) && Array.isArray(rows.rows)) rows = rows.rows;
  if (!Array.isArray(rows)) throw choicesFailed(field, `${rule.endpoint} answered no list${rule.query !== undefined ? ` under ${rule.query}` : ''}`);
  if (rows.length > MAX_CHOICES) throw choicesFailed(field, `${rule.endpoint} answered more than ${MAX_CHOICES} choices`);
  return rows.map((row) => {
    const value = rule.value !== undefined && isObject(row) ? row[rule.value] : row;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      throw choicesFailed(field, `a row of ${rule.endpoint} has no ${rule.value ?? 'plain'} value`);
    const label = rule.label !== undefined && isObject(row) ? row[rule.label] : undefined;
    return { value, label: label === undefined || label === null ? String(value) : String(label) };
  });
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

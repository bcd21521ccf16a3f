import { z } from '@tkgate/core';

/**
 * The keys of a `type: internal` endpoint: either `pseudo_querys` (declarative queries, run in order in
 * one transaction) or `handler` (a named in-process function).
 */
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const valueMap = z.record(z.string(), scalar);
const name = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a name of letters, digits and _');

export const DEFAULT_SELECT_LIMIT = 100;
export const MAX_SELECT_LIMIT = 10_000;

const queryName = name.optional().describe("The key of this query's result in data; needed when there are several queries.");
const table = (verb: string) => z.string().describe(`The table to ${verb}.`);
const values = (what: string) =>
  valueMap.describe(`${what}: column -> literal or reference ($payload.<field>, $context.<field>, $db_context.<key>), always bound.`);

/** The operators of a condition, in the order a misspelt one is matched against them (`=>` means `>=`). */
export const COMPARISONS = ['>=', '<=', '>', '<', '!=', '='] as const;
export type Comparison = (typeof COMPARISONS)[number];
export const MAX_IN_ITEMS = 1000;

const comparison = (words: string) => scalar.optional().describe(`The column ${words} this value (a literal or a reference).`);
/**
 * The longest search text (UTF-16 units): SQLite refuses a pattern past 50,000 bytes, which its GLOB of an escaped
 * text of 3 bytes a unit at most stays far below; every database is bounded alike (docs/toolkits.md).
 */
export const MAX_SEARCH_LENGTH = 4096;

const search = (words: string) =>
  z
    .string()
    .max(MAX_SEARCH_LENGTH)
    .optional()
    .describe(
      `Rows whose text ${words} this value, case-sensitive; its own wildcard characters match only themselves. A search text is at most ${MAX_SEARCH_LENGTH} characters (longer from the request: 400).`,
    );

const ONE_OPERATOR = 'needs exactly one operator: >=, <=, >, <, !=, =, in, like or is_null';

/** An operator object in a where: exactly one operator, and `optional`. */
const conditionSchema = z
  .strictObject({
    '>=': comparison('is at least'),
    '<=': comparison('is at most'),
    '>': comparison('is greater than'),
    '<': comparison('is less than'),
    '!=': comparison('differs from (null: IS NOT NULL; a NULL column never differs)'),
    '=': comparison('equals (null: IS NULL)'),
    in: z
      .union([z.string(), z.array(scalar).max(MAX_IN_ITEMS)])
      .optional()
      .describe(`The column is one of these values: a list, or $payload.<field> holding a list (at most ${MAX_IN_ITEMS} items; none matches no row).`),
    like: z
      .strictObject({ prefix: search('starts with'), contains: search('contains') })
      .refine((like) => (like.prefix === undefined) !== (like.contains === undefined), 'needs exactly one of prefix or contains')
      .optional()
      .describe('A text search: { prefix: <value> } or { contains: <value> }.'),
    is_null: z.boolean().optional().describe('true: the column is NULL; false: it is not.'),
    optional: z.boolean().optional().describe('true: the condition is left out when its $payload field is absent (instead of 400).'),
  })
  .refine((condition) => OPERATORS.filter((op) => op in condition).length === 1, ONE_OPERATOR);
const OPERATORS = [...COMPARISONS, 'in', 'like', 'is_null'] as const;
export type Operator = (typeof OPERATORS)[number];
export type ConditionConfig = z.infer<typeof conditionSchema>;

const whereMap = (what: string) =>
  z
    .record(z.string(), z.union([scalar, conditionSchema]))
    .describe(
      `${what}: column -> value (equality; null matches NULL) or an operator object ({ ">=": $payload.min }, { in: [...] }, { like: { prefix: $payload.q } }, { is_null: true }, with optional: true to leave it out when its field is absent). Values are literals or references, always bound.`,
    );
const nonEmpty = (map: Record<string, unknown>) => Object.keys(map).length > 0;

/** `limit` / `offset` taken from the payload: `{ from: $payload.limit, max: 200, default: 50 }`. */
const fromPayload = (what: string, max: number | undefined, fallback: number) =>
  z
    .strictObject({
      from: z.string().describe(`$payload.<field> holding the ${what} (a whole number, at least 0).`),
      max: z
        .number()
        .int()
        .min(1)
        .max(max ?? Number.MAX_SAFE_INTEGER)
        .optional()
        .describe(`A larger value is refused with 400${max ? ` (default and at most ${max})` : ''}.`),
      default: z.number().int().min(0).optional().describe(`When the field is absent (default ${fallback}, or max if smaller).`),
    })
    .describe(`The ${what} chosen by the caller.`);

const orderChoice = z
  .strictObject({
    from: z.string().describe('$payload.<field> naming the column: name ascending, -name descending.'),
    allowed: z.array(z.string()).min(1).describe('The columns the caller may order by (either direction).'),
    default: z.string().optional().describe('When the field is absent: a column or -column (default: the first allowed, ascending).'),
  })
  .describe('The order chosen by the caller among allowed columns; any other value is refused with 400.');

const querySchemas = {
  select: z.strictObject({
    name: queryName,
    select: table('read'),
    columns: z.array(z.string()).min(1).describe('The columns to return.'),
    where: whereMap('Conditions, all of which a row meets').optional(),
    order_by: z
      .union([z.string(), z.array(z.string()).min(1), orderChoice])
      .optional()
      .describe('A column, or -column for descending, or a list of them, or { from, allowed, default } for the caller to choose.'),
    limit: z
      .union([z.number().int().min(1).max(MAX_SELECT_LIMIT), fromPayload('number of rows', MAX_SELECT_LIMIT, DEFAULT_SELECT_LIMIT)])
      .optional()
      .describe(`At most this many rows (default ${DEFAULT_SELECT_LIMIT}, at most ${MAX_SELECT_LIMIT}), or { from, max, default }.`),
    offset: z
      .union([z.number().int().min(0), fromPayload('rows to skip', undefined, 0)])
      .optional()
      .describe('Rows to skip before the first returned (default 0), or { from, max, default }.'),
    count: z.boolean().optional().describe('true: data is { rows, count }, count being every matching row (limit and offset aside).'),
  }),
  insert: z.strictObject({
    name: queryName,
    insert: table('insert into'),
    values: values('The new row').refine(nonEmpty, 'needs at least one column'),
  }),
  update: z.strictObject({
    name: queryName,
    update: table('update'),
    set: values('The new values').refine(nonEmpty, 'needs at least one column'),
    where: whereMap('Conditions; required, with at least one that is not optional').refine(nonEmpty, 'update needs a non-empty where'),
  }),
  delete: z.strictObject({
    name: queryName,
    delete: table('delete from'),
    where: whereMap('Conditions; required, with at least one that is not optional').refine(nonEmpty, 'delete needs a non-empty where'),
  }),
};

export type Operation = keyof typeof querySchemas;
const OPERATIONS = Object.keys(querySchemas) as Operation[];

export type Scalar = z.infer<typeof scalar>;
export type WhereValue = Scalar | ConditionConfig;
/** A page bound (limit or offset) the caller chooses. */
export interface PageChoice {
  from: string;
  max?: number;
  default?: number;
}
export interface OrderChoice {
  from: string;
  allowed: string[];
  default?: string;
}

export interface PseudoQuery {
  op: Operation;
  name?: string;
  table: string;
  columns?: string[];
  where?: Record<string, WhereValue>;
  values?: Record<string, Scalar>;
  orderBy?: string[] | OrderChoice;
  limit?: number | PageChoice;
  offset?: number | PageChoice;
  count?: boolean;
}

/** The operator of a where value: a scalar is `=`. */
export function operatorOf(value: WhereValue): Operator {
  if (value === null || typeof value !== 'object') return '=';
  return OPERATORS.find((op) => op in value)!;
}

/** Each query is checked against the schema of its own operation, so errors name the right keys. */
const pseudoQuery = z
  .record(z.string(), z.unknown())
  .transform((raw, ctx): PseudoQuery => {
    const ops = OPERATIONS.filter((op) => op in raw);
    if (ops.length !== 1) {
      ctx.addIssue({ code: 'custom', message: 'needs exactly one of select, insert, update or delete' });
      return z.NEVER;
    }
    const op = ops[0]!;
    const parsed = querySchemas[op].safeParse(raw);
    if (!parsed.success) {
      // An unknown key is the mistake to name (`=>` for `>=`): that no operator is left is its consequence.
      const unknownAt = new Set(parsed.error.issues.filter((issue) => issue.code === 'unrecognized_keys').map((issue) => issue.path.join('\u0000')));
      for (const issue of parsed.error.issues) if (!(issue.message === ONE_OPERATOR && unknownAt.has(issue.path.join('\u0000')))) addIssues(ctx, issue, raw);
      return z.NEVER;
    }
    const query = parsed.data as Record<string, unknown>;
    return {
      op,
      name: query.name as string | undefined,
      table: query[op] as string,
      columns: query.columns as string[] | undefined,
      where: query.where as Record<string, Scalar> | undefined,
      values: (query.values ?? query.set) as Record<string, Scalar> | undefined,
      orderBy: typeof query.order_by === 'string' ? [query.order_by] : (query.order_by as PseudoQuery['orderBy']),
      limit: query.limit as PseudoQuery['limit'],
      offset: query.offset as PseudoQuery['offset'],
      count: query.count as boolean | undefined,
    };
  })
  // The shape editors see (`tkgate schema`); the transform above checks the same, naming the right keys.
  .meta({
    oneOf: OPERATIONS.map((op) => z.toJSONSchema(querySchemas[op], { target: 'draft-2020-12', io: 'input' })).map(({ $schema: _dialect, ...schema }) => schema),
  })
  .describe('One query: exactly one of select, insert, update or delete.');

/**
 * A zod issue as the operator should read it: an unknown key named at its own path (so `config check` can
 * suggest the nearest), and a where value that is neither a scalar nor a valid operator object explained
 * by the operator object's own issues rather than by "invalid input".
 */
function addIssues(ctx: z.RefinementCtx, issue: z.core.$ZodIssue, raw: Record<string, unknown>): void {
  if (issue.code === 'unrecognized_keys') {
    for (const key of issue.keys) ctx.addIssue({ code: 'custom', path: [...issue.path, key], message: 'unknown key' });
    return;
  }
  const value = valueAt(raw, issue.path);
  if (issue.code === 'invalid_union' && issue.path.length === 2 && issue.path[0] === 'where' && value !== null && typeof value === 'object') {
    const condition = conditionSchema.safeParse(value);
    if (!condition.success) {
      for (const inner of condition.error.issues) addIssues(ctx, { ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue, raw);
      return;
    }
  }
  ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  return value;
}

export const internalConfigSchema = z
  .strictObject({
    pseudo_querys: z.array(pseudoQuery).min(1).optional().describe('Declarative queries, run in order in one transaction.'),
    handler: z.string().min(1).optional().describe('The name of an in-process function a loaded plugin registered.'),
  })
  .refine((config) => (config.pseudo_querys === undefined) !== (config.handler === undefined), {
    message: 'an internal endpoint needs either pseudo_querys or handler (not both)',
  })
  .meta({ oneOf: [{ required: ['pseudo_querys'] }, { required: ['handler'] }] });

export type InternalConfig = z.infer<typeof internalConfigSchema>;

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

const querySchemas = {
  select: z.strictObject({
    name: queryName,
    select: table('read'),
    columns: z.array(z.string()).min(1).describe('The columns to return.'),
    where: values('Equality on every listed column (null matches NULL)').optional(),
    order_by: z
      .union([z.string(), z.array(z.string()).min(1)])
      .optional()
      .describe('A column, or -column for descending, or a list of them.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_SELECT_LIMIT)
      .optional()
      .describe(`At most this many rows (default ${DEFAULT_SELECT_LIMIT}, at most ${MAX_SELECT_LIMIT}).`),
  }),
  insert: z.strictObject({
    name: queryName,
    insert: table('insert into'),
    values: values('The new row').refine((v) => Object.keys(v).length > 0, 'needs at least one column'),
  }),
  update: z.strictObject({
    name: queryName,
    update: table('update'),
    set: values('The new values').refine((v) => Object.keys(v).length > 0, 'needs at least one column'),
    where: values('Equality on every listed column; required, not empty').refine((v) => Object.keys(v).length > 0, 'update needs a non-empty where'),
  }),
  delete: z.strictObject({
    name: queryName,
    delete: table('delete from'),
    where: values('Equality on every listed column; required, not empty').refine((v) => Object.keys(v).length > 0, 'delete needs a non-empty where'),
  }),
};

export type Operation = keyof typeof querySchemas;
const OPERATIONS = Object.keys(querySchemas) as Operation[];

export type Scalar = z.infer<typeof scalar>;

export interface PseudoQuery {
  op: Operation;
  name?: string;
  table: string;
  columns?: string[];
  where?: Record<string, Scalar>;
  values?: Record<string, Scalar>;
  orderBy?: string[];
  limit?: number;
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
      for (const issue of parsed.error.issues) {
        const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
        for (const key of keys) {
          ctx.addIssue({ code: 'custom', path: key ? [...issue.path, key] : issue.path, message: key ? 'unknown key' : issue.message });
        }
      }
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
      orderBy: typeof query.order_by === 'string' ? [query.order_by] : (query.order_by as string[] | undefined),
      limit: query.limit as number | undefined,
    };
  })
  // The shape editors see (`tkgate schema`); the transform above checks the same, naming the right keys.
  .meta({
    oneOf: OPERATIONS.map((op) => z.toJSONSchema(querySchemas[op], { target: 'draft-2020-12', io: 'input' })).map(({ $schema: _dialect, ...schema }) => schema),
  })
  .describe('One query: exactly one of select, insert, update or delete.');

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

/**
 * The type of a column, as far as comparing and storing request values goes, and the conversion of a value
 * to it. MySQL/MariaDB compare a text column with a number by casting the column to a number ('abc' = 0),
 * so `{"title": 0}` would match every row: a value is converted to the column's own type first, and one
 * that does not convert exactly is refused. SQLite gets the same conversions, so both answer alike.
 *
 * Conversions are picked at load (one per compared column); at request time one call converts one value.
 * Each dialect reads its columns' kinds from its own catalogue (db/dialects/).
 */
export type ColumnKind = 'integer' | 'boolean' | 'number' | 'text' | 'temporal' | 'any';

/** What convert() returns for a value that does not convert exactly to the column's type. */
export const NOT_CONVERTIBLE: unique symbol = Symbol('not convertible');

export interface ColumnType {
  kind: ColumnKind;
  /** What a value must be, for messages: "an integer". */
  expected: string;
  /** The value as the column's own type (null stays null), or NOT_CONVERTIBLE. */
  convert(value: unknown): unknown;
}

/** The decimal form of an integer, as String(n) writes it: not "012", "1e3", "12.0" or " 12". */
const INTEGER_TEXT = /^-?(?:0|[1-9][0-9]*)$/;
/** A JSON number. */
const NUMBER_TEXT = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$/;
/** The widest integer columns: BIGINT from -2^63 to 2^64-1 (unsigned). */
const INTEGER_MIN = -(2n ** 63n);
const INTEGER_MAX = 2n ** 64n - 1n;

function toInteger(value: unknown): unknown {
  if (value === null) return null;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : NOT_CONVERTIBLE;
  if (typeof value !== 'string' || value.length > 21 || !INTEGER_TEXT.test(value)) return NOT_CONVERTIBLE;
  const small = Number(value);
  if (Number.isSafeInteger(small)) return small;
  // Beyond 2^53 a JS number is rounded: bound as a BigInt, the database compares the exact integer.
  const big = BigInt(value);
  return big >= INTEGER_MIN && big <= INTEGER_MAX ? big : NOT_CONVERTIBLE;
}

const BOOLEANS = new Map<unknown, number>([
  [true, 1],
  [false, 0],
  [1, 1],
  [0, 0],
  ['true', 1],
  ['false', 0],
  ['1', 1],
  ['0', 0],
]);

function toBoolean(value: unknown): unknown {
  if (value === null) return null;
  return BOOLEANS.get(value) ?? NOT_CONVERTIBLE;
}

function toNumber(value: unknown): unknown {
  if (value === null) return null;
  if (typeof value === 'number') return Number.isFinite(value) ? value : NOT_CONVERTIBLE;
  if (typeof value !== 'string' || value.length > 400 || !NUMBER_TEXT.test(value)) return NOT_CONVERTIBLE;
  const number = Number(value);
  return Number.isFinite(number) ? number : NOT_CONVERTIBLE;
}

/** Numbers become their decimal text (what SQLite's text affinity does too); booleans have no text form. */
function toText(value: unknown): unknown {
  if (value === null || typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return String(value);
  return NOT_CONVERTIBLE;
}

/** Dates and times: strings (and numbers) as given; the database parses them. Never a boolean. */
function toTemporal(value: unknown): unknown {
  return typeof value === 'boolean' ? NOT_CONVERTIBLE : value;
}

export const COLUMN_TYPES: Readonly<Record<ColumnKind, ColumnType>> = {
  integer: { kind: 'integer', expected: 'an integer', convert: toInteger },
  boolean: { kind: 'boolean', expected: 'a boolean', convert: toBoolean },
  number: { kind: 'number', expected: 'a number', convert: toNumber },
  text: { kind: 'text', expected: 'a string', convert: toText },
  temporal: { kind: 'temporal', expected: 'a date or time', convert: toTemporal },
  // A SQLite column declared without a type holds any value and compares it as it is.
  any: { kind: 'any', expected: 'a value', convert: (value) => value },
};

/**
 * The type of a column, as far as comparing and storing request values goes, and the conversion of a value
 * to it. MySQL/MariaDB compare a text column with a number by casting the column to a number ('abc' = 0),
 * so `{"title": 0}` would match every row: a value is converted to the column's own type first, and one
 * that does not convert exactly is refused. SQLite gets the same conversions, so both answer alike.
 *
 * Conversions are picked at load (one per compared column); at request time one call converts one value.
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

/** MySQL/MariaDB: information_schema.COLUMNS' DATA_TYPE and COLUMN_TYPE. Unknown types compare as text. */
export function mysqlColumnKind(dataType: string, columnType: string): ColumnKind {
  const type = dataType.toLowerCase();
  if (type === 'tinyint' && /^tinyint\(1\)/i.test(columnType)) return 'boolean';
  if (['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint', 'year'].includes(type)) return 'integer';
  if (['decimal', 'numeric', 'float', 'double', 'real'].includes(type)) return 'number';
  if (['date', 'datetime', 'timestamp', 'time'].includes(type)) return 'temporal';
  return 'text';
}

/** PostgreSQL: information_schema.columns' data_type. Unknown types (uuid, json, enums...) compare as text. */
export function postgresColumnKind(dataType: string): ColumnKind {
  const type = dataType.toLowerCase();
  if (type === 'boolean') return 'boolean';
  if (['smallint', 'integer', 'bigint'].includes(type)) return 'integer';
  if (['numeric', 'real', 'double precision', 'money'].includes(type)) return 'number';
  if (type === 'date' || type.startsWith('timestamp') || type.startsWith('time') || type === 'interval') return 'temporal';
  return 'text';
}

/** SQLite: the declared type, by its affinity rules (sqlite.org/datatype3.html 3.1), booleans and dates first. */
export function sqliteColumnKind(declared: string): ColumnKind {
  const type = declared.toUpperCase();
  if (type.includes('BOOL')) return 'boolean';
  if (type.includes('INT')) return 'integer';
  if (type.includes('CHAR') || type.includes('CLOB') || type.includes('TEXT')) return 'text';
  if (type === '' || type.includes('BLOB')) return 'any';
  if (type.includes('DATE') || type.includes('TIME')) return 'temporal';
  if (type.includes('JSON')) return 'text';
  return 'number';
}

import type { ParseArgsConfig } from 'node:util';

export type OptionValues = Record<string, string | boolean | undefined>;

export interface Invocation {
  values: OptionValues;
  operands: string[];
}

/** One tkgate command: its words, its options, how many operands it takes, and what it does. */
export interface Command {
  name: string;
  usage: string;
  summary: string;
  options: NonNullable<ParseArgsConfig['options']>;
  operands: { min: number; max: number };
  run(invocation: Invocation): Promise<number | void>;
}

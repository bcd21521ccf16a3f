import type { RE2JS } from 're2js';

/** re2js's compiled program, as it keeps it (not part of its typed API: read defensively). */
interface Instruction {
  op: number;
  out: number;
  arg: number;
}
interface Program {
  inst: Instruction[];
  start: number;
  numLb?: number;
}

// re2js's Inst opcodes and empty-width flags (the same as RE2's).
const ALT = 1;
const ALT_MATCH = 2;
const EMPTY_WIDTH = 4;
const FAIL = 5;
const MATCH = 6;
const FIRST_RUNE_OP = 8;
const LAST_RUNE_OP = 11;
const BEGIN_TEXT = 4;
const END_TEXT = 8;

/** Larger programs are not walked (they could not fit the pattern budget with any useful length anyway). */
const MAX_WALKED = 4096;

class Unbounded extends Error {}

/**
 * The longest value (in code points) a pattern can match, when the pattern holds the whole value: anchored at
 * the start (`^`, `\A`) and the end (`$`, `\z`) on every path, with no repetition left open (`*`, `+`, `{n,}`).
 * `^[a-z]{1,20}$` gives 20: a longer value cannot match, so it never needs to be run. Undefined when the
 * pattern is not bounded that way (or the program is one this does not read).
 *
 * Read from the compiled program: the longest path from its start to MATCH counting the instructions that
 * consume a character, where every path passes BEGIN_TEXT before its first character and END_TEXT after its
 * last. A loop anywhere on a path to MATCH means unbounded.
 */
export function longestMatch(regex: RE2JS): number | undefined {
  const program = (regex as unknown as { re2Input?: { prog?: Program } }).re2Input?.prog;
  if (!program || !Array.isArray(program.inst) || program.inst.length > MAX_WALKED || (program.numLb ?? 0) > 0) return undefined;
  const { inst } = program;
  // State: the instruction, and whether BEGIN_TEXT (bit 1) and END_TEXT since the last character (bit 2) were passed.
  const memo = new Map<number, number>();
  const onPath = new Set<number>();
  const longest = (pc: number, flags: number): number => {
    const key = pc * 4 + flags;
    const known = memo.get(key);
    if (known !== undefined) return known;
    if (onPath.has(key)) throw new Unbounded();
    const instruction = inst[pc];
    if (!instruction) throw new Unbounded();
    onPath.add(key);
    let result: number;
    const { op } = instruction;
    if (op === MATCH) {
      if (flags !== 3) throw new Unbounded(); // a match that does not hold the whole value
      result = 0;
    } else if (op === FAIL) {
      result = -Infinity;
    } else if (op >= FIRST_RUNE_OP && op <= LAST_RUNE_OP) {
      if ((flags & 1) === 0) throw new Unbounded(); // a character before BEGIN_TEXT: the match may start anywhere
      // After END_TEXT no character can follow: a dead path.
      result = (flags & 2) !== 0 ? -Infinity : 1 + longest(instruction.out, 1);
    } else if (op === EMPTY_WIDTH) {
      const begins = (instruction.arg & BEGIN_TEXT) !== 0 ? 1 : 0;
      const ends = (instruction.arg & END_TEXT) !== 0 ? 2 : 0;
      result = longest(instruction.out, flags | begins | ends);
    } else if (op === ALT || op === ALT_MATCH) {
      result = Math.max(longest(instruction.out, flags), longest(instruction.arg, flags));
    } else {
      // CAPTURE, NOP and the like: nothing consumed.
      result = longest(instruction.out, flags);
    }
    onPath.delete(key);
    memo.set(key, result);
    return result;
  };
  try {
    const found = longest(program.start, 0);
    return Number.isFinite(found) ? found : undefined;
  } catch (err) {
    if (err instanceof Unbounded || err instanceof RangeError) return undefined;
    throw err;
  }
}

/**
 * A compiled re2js program as lazy-dfa.ts and captures.ts read it: its instructions, their codes and
 * the empty-width flags (the same as Go's regexp/syntax, which re2js ports), and which ASCII characters
 * each consuming instruction takes.
 */
import type { RE2JS } from 're2js';

/** One instruction of a compiled program, as re2js's `Prog` holds it. */
export interface ProgramInst {
  readonly op: number;
  readonly out: number;
  readonly arg: number;
  matchRune(rune: number): boolean;
}

export interface Program {
  readonly start: number;
  readonly inst: readonly ProgramInst[];
}

export const ALT = 1;
export const ALT_MATCH = 2;
export const CAPTURE = 3;
export const EMPTY_WIDTH = 4;
export const FAIL = 5;
export const MATCH = 6;
export const NOP = 7;
export const RUNE = 8;
export const RUNE_ANY = 10;
/** The last code either reader knows; beyond it are re2js's lookbehind instructions. */
export const RUNE_ANY_NOT_NL = 11;

export const BEGIN_LINE = 1;
export const END_LINE = 2;
export const BEGIN_TEXT = 4;
export const END_TEXT = 8;
export const WORD_BOUNDARY = 16;
export const NO_WORD_BOUNDARY = 32;
export const ALL_FLAGS = 63;

export const ASCII = 128;

/** What `\b` counts as a word character in RE2 (ASCII only). */
export const isWordChar = (code: number): boolean =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;

/**
 * re2js's compiled program of a pattern, when the pattern object holds one in the shape read here
 * (a field re2js declares but does not document, so its shape is checked rather than assumed).
 */
export function programOf(pattern: RE2JS): Program | null {
  const re2: unknown = (pattern as unknown as { re2Input?: unknown }).re2Input;
  const prog: unknown = typeof re2 === 'object' && re2 !== null ? (re2 as { prog?: unknown }).prog : undefined;
  if (typeof prog !== 'object' || prog === null) return null;
  const { start, inst, numLb } = prog as { start?: unknown; inst?: unknown; numLb?: unknown };
  if (typeof start !== 'number' || !Array.isArray(inst) || (numLb !== undefined && numLb !== 0)) return null;
  const wellFormed = inst.every((one: unknown) => {
    const candidate = one as { op?: unknown; out?: unknown; arg?: unknown; matchRune?: unknown } | null;
    return typeof candidate === 'object' && candidate !== null && typeof candidate.op === 'number' && candidate.op >= ALT && candidate.op <= RUNE_ANY_NOT_NL
      && typeof candidate.out === 'number' && typeof candidate.arg === 'number' && typeof candidate.matchRune === 'function';
  });
  return wellFormed ? { start, inst: inst as Program['inst'] } : null;
}

/** For each consuming instruction, which ASCII characters it takes (1) or not (0); null for the others. */
export function asciiTakes(program: Program): (Uint8Array | null)[] {
  return program.inst.map((inst) => {
    if (inst.op < RUNE) return null;
    const mask = new Uint8Array(ASCII);
    for (let code = 0; code < ASCII; code += 1) {
      mask[code] = inst.op === RUNE_ANY || (inst.op === RUNE_ANY_NOT_NL ? code !== 10 : inst.matchRune(code)) ? 1 : 0;
    }
    return mask;
  });
}

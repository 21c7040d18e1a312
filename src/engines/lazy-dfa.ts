/**
 * A lazy DFA over a compiled RE2 program, for ASCII text (the only text rules see: see matchingForm).
 * re2js answers `test` with a DFA of its own, but pays a UTF-16 decoding call, a map lookup and a match
 * check per character, and it can only say whether a text matches, not where: its match extraction runs
 * an NFA (a backtracker for small programs) from the start of the text, which cost ten times the test.
 * Here every transition is one typed-array read, and a backward pass gives the start of the leftmost
 * match, so the capture is read from there alone (see captures.ts).
 *
 * Both directions simulate the program as sets of instructions, built lazily as the text needs them and
 * cached: linear in the text (a step costs at most one pass over the program), never backtracking.
 */
import {
  ALL_FLAGS, ALT, ALT_MATCH, ASCII, asciiTakes, BEGIN_LINE, BEGIN_TEXT, CAPTURE, EMPTY_WIDTH, END_LINE, END_TEXT, FAIL, isWordChar, MATCH, NO_WORD_BOUNDARY, NOP,
  WORD_BOUNDARY, type Program, type ProgramInst,
} from './re2-program.js';

export interface AsciiDfa {
  /** Whether the program matches anywhere in `text`; null when the text holds a non-ASCII character. */
  test(text: string): boolean | null;
  /** Where the leftmost match starts, -1 when there is none; null for a non-ASCII text. */
  leftmostStart(text: string): number | null;
}

/** What a character next to a position tells the empty-width assertions there. */
const OTHER = 0;
const NEWLINE = 1;
const WORD = 2;
/** The start or the end of the text. */
const EDGE = 3;

/** Cached states per direction before the cache is emptied: bounds memory, not time. */
const MAX_STATES = 2048;
/** An entry not computed yet: no state's entry reads so, as state numbers stay far below 2^14. */
const UNKNOWN = 0xffff;
/** Stands for "any character" where a closure only asks whether a thread could read one. */
const ANY_COLUMN = -1;

/** re2js's `emptyOpContext` for the characters on either side of a position. */
function flagsBetween(before: number, after: number): number {
  let flags = 0;
  if (before === EDGE) flags |= BEGIN_TEXT | BEGIN_LINE;
  if (before === NEWLINE) flags |= BEGIN_LINE;
  if (after === EDGE) flags |= END_TEXT | END_LINE;
  if (after === NEWLINE) flags |= END_LINE;
  flags |= (before === WORD) !== (after === WORD) ? WORD_BOUNDARY : NO_WORD_BOUNDARY;
  return flags;
}

interface Moved {
  readonly set: Int32Array;
  readonly kind: number;
  readonly hit: boolean;
}

/**
 * A DFA for one direction: states are sets of instructions plus the kind of the character last read,
 * a transition reads one character class (or the text's edge, the last column) and may report a hit.
 * A step is one read of `table` at the state's row offset plus the column: the entry is the next state's
 * number shifted left by two, with bit 0 set on a hit and bit 1 when the next state can never hit. 16
 * bits an entry: the tables of all the rules' automata are read once per character, and at half the
 * bytes more of them are still in cache when the next message comes.
 */
class Automaton {
  private readonly ids = new Map<string, number>();
  private sets: Int32Array[] = [];
  private kinds: number[] = [];
  /** Per state: 2 when no match can come from it any more, else 0. */
  private dead: number[] = [];
  /** Row offset + column → entry, or UNKNOWN. Replaced when it grows: read it again after `compute`. */
  table: Uint16Array;

  constructor(
    private readonly columns: number,
    private readonly move: (set: Int32Array, kind: number, column: number) => Moved,
    private readonly initial: Int32Array,
    private readonly hopeless: (set: Int32Array, kind: number) => boolean,
  ) {
    this.table = new Uint16Array(64 * columns).fill(UNKNOWN);
    this.intern(initial, EDGE);
  }

  /** The row every text starts from. */
  readonly start = 0;

  /** The entry for `row` on `column`, computed and cached. */
  compute(row: number, column: number): number {
    const state = row / this.columns;
    const set = this.sets[state] as Int32Array;
    const kind = this.kinds[state] as number;
    const moved = this.move(set, kind, column);
    let from = state;
    let target = this.intern(moved.set, moved.kind);
    if (this.sets.length > MAX_STATES) {
      // Start again from an empty cache: memory stays bounded, and a step still costs at most one
      // pass over the program.
      this.ids.clear();
      this.sets = [];
      this.kinds = [];
      this.dead = [];
      this.table.fill(UNKNOWN);
      this.intern(this.initial, EDGE);
      from = this.intern(set, kind);
      target = this.intern(moved.set, moved.kind);
    }
    const entry = (target << 2) | (this.dead[target] as number) | (moved.hit ? 1 : 0);
    this.table[from * this.columns + column] = entry;
    return entry;
  }

  private intern(set: Int32Array, kind: number): number {
    const key = `${kind}:${set.join(',')}`;
    const known = this.ids.get(key);
    if (known !== undefined) return known;
    const id = this.sets.length;
    this.ids.set(key, id);
    this.sets.push(set);
    this.kinds.push(kind);
    this.dead.push(this.hopeless(set, kind) ? 2 : 0);
    if ((id + 1) * this.columns > this.table.length) {
      const grown = new Uint16Array(this.table.length * 2).fill(UNKNOWN);
      grown.set(this.table);
      this.table = grown;
    }
    return id;
  }
}

/** A sorted copy of the distinct values of `list[0..length)`. */
function sortedSet(list: Int32Array, length: number): Int32Array {
  return Int32Array.from(new Set(list.subarray(0, length))).sort();
}

/**
 * Builds the two automata for a program (see programOf for the programs that qualify); `takes` is what
 * asciiTakes gives for it, when the caller has it already.
 */
export function buildAsciiDfa(program: Program, takes: readonly (Uint8Array | null)[] = asciiTakes(program)): AsciiDfa {
  const insts = program.inst;
  const size = insts.length;
  let needs = 0;
  for (const inst of insts) if (inst.op === EMPTY_WIDTH) needs |= inst.arg;
  const lines = (needs & (BEGIN_LINE | END_LINE)) !== 0;
  const words = (needs & (WORD_BOUNDARY | NO_WORD_BOUNDARY)) !== 0;

  // The classes of characters that no instruction or assertion tells apart.
  const kindOf = (code: number): number => (lines && code === 10 ? NEWLINE : words && isWordChar(code) ? WORD : OTHER);
  const classOf = new Uint8Array(ASCII);
  const representative: number[] = [];
  const signatures = new Map<string, number>();
  for (let code = 0; code < ASCII; code += 1) {
    let signature = String(kindOf(code));
    for (const mask of takes) if (mask !== null) signature += mask[code] as number;
    let cls = signatures.get(signature);
    if (cls === undefined) {
      cls = representative.length;
      signatures.set(signature, cls);
      representative.push(code);
    }
    classOf[code] = cls;
  }
  const edgeColumn = representative.length;
  const columns = edgeColumn + 1;
  const kindOfColumn = (column: number): number => (column === edgeColumn ? EDGE : kindOf(representative[column] as number));
  const takesColumn = (pc: number, column: number): boolean => column !== edgeColumn && (takes[pc] as Uint8Array)[representative[column] as number] === 1;

  const seen = new Int32Array(size);
  let generation = 0;
  const stack = new Int32Array(size * 4 + 4);
  const scratch = new Int32Array(size + 1);

  /**
   * Follows threads waiting at `set` through the moves that read no character, the assertions seeing
   * `flags`: where a consuming instruction takes `column`, its next instruction goes to `scratch`
   * (`length` of them); `hit` when a thread reaches a match.
   */
  const closure = (set: Int32Array, flags: number, column: number): { length: number; hit: boolean } => {
    generation += 1;
    let depth = 0;
    for (const pc of set) stack[depth++] = pc;
    let hit = false;
    let length = 0;
    while (depth > 0) {
      const pc = stack[--depth] as number;
      if (seen[pc] === generation) continue;
      seen[pc] = generation;
      const inst = insts[pc] as ProgramInst;
      switch (inst.op) {
        case ALT:
        case ALT_MATCH:
          stack[depth++] = inst.arg;
          stack[depth++] = inst.out;
          break;
        case NOP:
        case CAPTURE:
          stack[depth++] = inst.out;
          break;
        case EMPTY_WIDTH:
          if ((inst.arg & ~flags) === 0) stack[depth++] = inst.out;
          break;
        case MATCH:
          hit = true;
          break;
        case FAIL:
          break;
        default:
          if (column === ANY_COLUMN || takesColumn(pc, column)) scratch[length++] = inst.out;
      }
    }
    return { length, hit };
  };

  // Forward: a state is the set of instructions threads wait at, before the empty-width steps.
  const forward = new Automaton(columns, (set, kind, column) => {
    const { length, hit } = closure(set, flagsBetween(kind, kindOfColumn(column)), column);
    let count = length;
    if (column !== edgeColumn) scratch[count++] = program.start;
    return { set: sortedSet(scratch, count), kind: kindOfColumn(column), hit };
  }, Int32Array.of(program.start), (set, kind) => {
    // Past the start every assertion but "start of text" may hold: if even then no thread can read
    // a character or match, none ever will.
    if (kind === EDGE) return false;
    const { length, hit } = closure(set, ALL_FLAGS & ~BEGIN_TEXT, ANY_COLUMN);
    return length === 0 && !hit;
  });

  // Backward: the empty-width and plain moves into each instruction, and which consuming
  // instructions lead to it, so the instructions that can still reach a match are found from the end.
  const epsilonInto: { from: number; needs: number }[][] = Array.from({ length: size }, () => []);
  const runeInto: number[][] = Array.from({ length: size }, () => []);
  const matches: number[] = [];
  insts.forEach((inst, pc) => {
    switch (inst.op) {
      case ALT:
      case ALT_MATCH:
        epsilonInto[inst.out]?.push({ from: pc, needs: 0 });
        epsilonInto[inst.arg]?.push({ from: pc, needs: 0 });
        break;
      case NOP:
      case CAPTURE:
        epsilonInto[inst.out]?.push({ from: pc, needs: 0 });
        break;
      case EMPTY_WIDTH:
        epsilonInto[inst.out]?.push({ from: pc, needs: inst.arg });
        break;
      case MATCH:
        matches.push(pc);
        break;
      case FAIL:
        break;
      default:
        runeInto[inst.out]?.push(pc);
    }
  });
  // A state is the set of consuming instructions that, taking the character after the position, can
  // go on to a match; `hit` reports that a match starts at the position the transition reads before.
  const backward = new Automaton(columns, (set, kind, column) => {
    const flags = flagsBetween(kindOfColumn(column), kind);
    generation += 1;
    let depth = 0;
    for (const pc of set) stack[depth++] = pc;
    for (const pc of matches) stack[depth++] = pc;
    let hit = false;
    let length = 0;
    while (depth > 0) {
      const pc = stack[--depth] as number;
      if (seen[pc] === generation) continue;
      seen[pc] = generation;
      if (pc === program.start) hit = true;
      for (const edge of epsilonInto[pc] as { from: number; needs: number }[]) {
        if ((edge.needs & ~flags) === 0 && seen[edge.from] !== generation) stack[depth++] = edge.from;
      }
      if (column !== edgeColumn) for (const from of runeInto[pc] as number[]) if (takesColumn(from, column)) scratch[length++] = from;
    }
    return { set: sortedSet(scratch, length), kind: kindOfColumn(column), hit };
  }, new Int32Array(0), () => false);

  return {
    test(text) {
      let table = forward.table;
      let row = forward.start;
      for (let at = 0; at < text.length; at += 1) {
        const code = text.charCodeAt(at);
        if (code >= ASCII) return null;
        let entry = table[row + (classOf[code] as number)] as number;
        if (entry === UNKNOWN) {
          entry = forward.compute(row, classOf[code] as number);
          table = forward.table;
        }
        if ((entry & 3) !== 0) return (entry & 1) === 1;
        row = (entry >> 2) * columns;
      }
      const last = table[row + edgeColumn] as number;
      return ((last === UNKNOWN ? forward.compute(row, edgeColumn) : last) & 1) === 1;
    },
    leftmostStart(text) {
      let table = backward.table;
      let row = backward.start;
      let first = -1;
      for (let at = text.length; at > 0; at -= 1) {
        const code = text.charCodeAt(at - 1);
        if (code >= ASCII) return null;
        let entry = table[row + (classOf[code] as number)] as number;
        if (entry === UNKNOWN) {
          entry = backward.compute(row, classOf[code] as number);
          table = backward.table;
        }
        if ((entry & 1) === 1) first = at;
        row = (entry >> 2) * columns;
      }
      const last = table[row + edgeColumn] as number;
      return ((last === UNKNOWN ? backward.compute(row, edgeColumn) : last) & 1) === 1 ? 0 : first;
    },
  };
}

/**
 * The capture groups of the match that starts at a known position, by backtracking over a compiled RE2
 * program in priority order (leftmost-first, as RE2 reports a match). Each instruction is tried at most
 * once per position, so the work is bounded by the program's size times the match's length, and it is
 * usually a few dozen steps: with the start known, no thread is tried at any other position. re2js's
 * own engines, asked for the same match, set up per call a bit map or thread lists as large as the
 * program times the rest of the text, which cost more than finding the match.
 */
import {
  ALT, ALT_MATCH, ASCII, BEGIN_LINE, BEGIN_TEXT, CAPTURE, EMPTY_WIDTH, END_LINE, END_TEXT, FAIL, isWordChar, MATCH, NO_WORD_BOUNDARY, NOP, WORD_BOUNDARY,
  type Program,
} from './re2-program.js';

/** re2js's `emptyOpContext` at `at` in `text`. */
function contextAt(text: string, at: number): number {
  const before = at > 0 ? text.charCodeAt(at - 1) : -1;
  const after = at < text.length ? text.charCodeAt(at) : -1;
  let flags = 0;
  if (before < 0) flags |= BEGIN_TEXT | BEGIN_LINE;
  if (before === 10) flags |= BEGIN_LINE;
  if (after < 0) flags |= END_TEXT | END_LINE;
  if (after === 10) flags |= END_LINE;
  flags |= isWordChar(before) !== isWordChar(after) ? WORD_BOUNDARY : NO_WORD_BOUNDARY;
  return flags;
}

/** Positions of the groups of a match: [start, end] of group 0, then of group 1 and so on; -1 where a group took no part. */
export type Captures = Int32Array;

export interface CaptureFinder {
  /** The groups of the leftmost-first match starting at `start` of the ASCII `text`, or null when none starts there. */
  matchAt(text: string, start: number): Captures | null;
}

/** Jobs on the backtracking stack: try `pc` at `pos`, or put a capture slot back to `pos`. */
const TRY = 0;
const RESTORE = 1;

/** `takes`: for each consuming instruction, the ASCII characters it takes (see asciiTakes). */
export function buildCaptureFinder(program: Program, groups: number, takes: readonly (Uint8Array | null)[]): CaptureFinder {
  // The program in flat typed arrays, and each distinct set of characters taken once: a step reads a
  // few numbers that sit together, where re2js's instruction objects and a mask per instruction were
  // pointers to follow into memory spread over the whole heap.
  const size = program.inst.length;
  const ops = Int32Array.from(program.inst, (inst) => inst.op);
  const outs = Int32Array.from(program.inst, (inst) => inst.out);
  const args = Int32Array.from(program.inst, (inst) => inst.arg);
  const { rowOf, rows } = distinctRows(takes);
  const slots = 2 * (groups + 1);
  const caps = new Int32Array(slots);

  return {
    matchAt(text, start) {
      const span = text.length - start + 1;
      // Keys are pc × span + offset: past 2^31 they would collide, so such a call is refused.
      if (size * span >= 0x7fffffff) return null;
      const visited = visitedSet(size * span);
      caps.fill(-1);
      caps[0] = start;
      let depth = pushJob(0, TRY, program.start, start);
      while (depth > 0) {
        const pos0 = jobs[--depth] as number;
        const pc0 = jobs[--depth] as number;
        const kind = jobs[--depth] as number;
        if (kind === RESTORE) {
          caps[pc0] = pos0;
          continue;
        }
        let pc = pc0;
        let pos = pos0;
        // Follow one thread, leaving its lower-priority alternatives on the stack, until it fails.
        for (;;) {
          if (!visited(pc * span + (pos - start))) break;
          const op = ops[pc] as number;
          if (op === ALT || op === ALT_MATCH) {
            depth = pushJob(depth, TRY, args[pc] as number, pos);
            pc = outs[pc] as number;
          } else if (op === CAPTURE) {
            const slot = args[pc] as number;
            if (slot < slots) {
              depth = pushJob(depth, RESTORE, slot, caps[slot] as number);
              caps[slot] = pos;
            }
            pc = outs[pc] as number;
          } else if (op === NOP) {
            pc = outs[pc] as number;
          } else if (op === EMPTY_WIDTH) {
            if (((args[pc] as number) & ~contextAt(text, pos)) !== 0) break;
            pc = outs[pc] as number;
          } else if (op === MATCH) {
            caps[1] = pos;
            return caps.slice();
          } else if (op === FAIL) {
            break;
          } else {
            if (pos >= text.length) break;
            const code = text.charCodeAt(pos);
            if (code >= ASCII || rows[(rowOf[pc] as number) * ASCII + code] !== 1) break;
            pos += 1;
            pc = outs[pc] as number;
          }
        }
      }
      return null;
    },
  };
}

/** The masks of `takes` with each distinct one kept once: `rows` holds row r at r × ASCII, `rowOf` each instruction's row (-1: consumes nothing). */
function distinctRows(takes: readonly (Uint8Array | null)[]): { rowOf: Int32Array; rows: Uint8Array } {
  const ids = new Map<string, number>();
  const kept: Uint8Array[] = [];
  const rowOf = Int32Array.from(takes, (mask) => {
    if (mask === null) return -1;
    const key = mask.join('');
    let id = ids.get(key);
    if (id === undefined) {
      id = kept.length;
      ids.set(key, id);
      kept.push(mask);
    }
    return id;
  });
  const rows = new Uint8Array(kept.length * ASCII);
  kept.forEach((mask, id) => {
    rows.set(mask, id * ASCII);
  });
  return { rowOf, rows };
}

/** The backtracking stack, shared by every finder: a search runs to its end before another starts. */
let jobs = new Int32Array(3 * 256);

function pushJob(depth: number, kind: number, pc: number, pos: number): number {
  if (depth + 3 > jobs.length) {
    const grown = new Int32Array(jobs.length * 2);
    grown.set(jobs);
    jobs = grown;
  }
  jobs[depth] = kind;
  jobs[depth + 1] = pc;
  jobs[depth + 2] = pos;
  return depth + 3;
}

/** Keys up to this many are marked in a bit set indexed by key; more go to a hash set. */
const DIRECT_KEYS = 1 << 18;
/**
 * Marks of the search under way, one bit a key, cleared over the keys of each search (a few hundred
 * words): a search's marks then sit in a few KB, where a table of stamps spread them over a hundred,
 * every one of them a cache miss between the requests of a gateway.
 */
const directBits = new Uint32Array(DIRECT_KEYS / 32);
/** Marks of a search with more keys: a key is marked when its slot's stamp is the search's. */
let hashKeys = new Int32Array(1024);
let hashStamps = new Int32Array(1024);
let hashUsed = 0;
let stamp = 0;

const markDirect = (key: number): boolean => {
  const word = key >>> 5;
  const bit = 1 << (key & 31);
  const held = directBits[word] as number;
  if ((held & bit) !== 0) return false;
  directBits[word] = held | bit;
  return true;
};

const markHashed = (key: number): boolean => {
  let mask = hashKeys.length - 1;
  let slot = (Math.imul(key, 0x9e3779b1) >>> 0) & mask;
  while (hashStamps[slot] === stamp) {
    if (hashKeys[slot] === key) return false;
    slot = (slot + 1) & mask;
  }
  hashKeys[slot] = key;
  hashStamps[slot] = stamp;
  hashUsed += 1;
  if (hashUsed * 2 > hashKeys.length) {
    const oldKeys = hashKeys;
    const oldStamps = hashStamps;
    hashKeys = new Int32Array(oldKeys.length * 2);
    hashStamps = new Int32Array(oldKeys.length * 2);
    mask = hashKeys.length - 1;
    for (let at = 0; at < oldKeys.length; at += 1) {
      if (oldStamps[at] !== stamp) continue;
      let moved = (Math.imul(oldKeys[at] as number, 0x9e3779b1) >>> 0) & mask;
      while (hashStamps[moved] === stamp) moved = (moved + 1) & mask;
      hashKeys[moved] = oldKeys[at] as number;
      hashStamps[moved] = stamp;
    }
  }
  return true;
};

/** A fresh set of (instruction, position) keys below `keys`: marks a key and says whether it was new. */
function visitedSet(keys: number): (key: number) => boolean {
  if (keys <= DIRECT_KEYS) {
    directBits.fill(0, 0, (keys + 31) >>> 5);
    return markDirect;
  }
  stamp += 1;
  if (stamp === 0x7fffffff) {
    // Stamps wrap after two billion searches: start the marks again from a clean table.
    hashStamps.fill(0);
    stamp = 1;
  }
  hashUsed = 0;
  return markHashed;
}

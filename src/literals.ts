/**
 * Where each of many literals first occurs in a text, found in one pass: an Aho–Corasick automaton over
 * the ASCII matching form. Pattern rules name the literals every match must hold (`requires`); finding
 * them all at once costs one walk of the text instead of one `indexOf` per literal per rule, which was a
 * third of the time of classifying a typical message.
 */

/** Marks a literal that counts only at the start of a word: after a non-word character, or at 0. */
export const WORD_START_HINT = '{<}';

const ASCII = 128;
/** The characters that continue a word, as the rules' `{<}` boundary sees them. */
const WORD_CHAR = new Uint8Array(ASCII);
for (const char of 'abcdefghijklmnopqrstuvwxyz0123456789_-') WORD_CHAR[char.charCodeAt(0)] = 1;

export interface LiteralIndex {
  /** The literals, `{<}` prefix included, in the order given (duplicates kept once). */
  readonly literals: readonly string[];
  /**
   * For each literal, where it first occurs in `text` (at a word start when marked so), or -1. The
   * array is the index's own, overwritten by the next call: read it before scanning another text.
   */
  firstPositions(text: string): Int32Array;
  /** Ids of the literals the last `firstPositions` call found, in the order it found them (the index's own array too). */
  found(): Int32Array;
}

/** Builds the automaton; every literal must be non-empty ASCII after its optional `{<}` mark. */
export function buildLiteralIndex(literals: readonly string[]): LiteralIndex {
  const unique = [...new Set(literals)];
  const bodies = unique.map((literal) => (literal.startsWith(WORD_START_HINT) ? literal.slice(WORD_START_HINT.length) : literal));
  const atWordStart = Uint8Array.from(unique, (literal) => (literal.startsWith(WORD_START_HINT) ? 1 : 0));
  for (const body of bodies) {
    if (body === '' || /[^\x00-\x7f]/.test(body)) throw new Error(`literal ${JSON.stringify(body)} must be non-empty ASCII`);
  }

  // Characters no literal holds share class 0, so each state needs one row of `classes` entries only.
  const classOf = new Uint8Array(ASCII);
  let classes = 1;
  for (const body of bodies) for (let i = 0; i < body.length; i += 1) {
    const code = body.charCodeAt(i);
    if (classOf[code] === 0) classOf[code] = classes++;
  }

  const children: Map<number, number>[] = [new Map()];
  const ends: number[][] = [[]];
  bodies.forEach((body, id) => {
    let state = 0;
    for (let i = 0; i < body.length; i += 1) {
      const cls = classOf[body.charCodeAt(i)] as number;
      let next = children[state]?.get(cls);
      if (next === undefined) {
        next = children.length;
        children.push(new Map());
        ends.push([]);
        children[state]?.set(cls, next);
      }
      state = next;
    }
    ends[state]?.push(id);
  });

  // Breadth first, each state's missing moves follow its failure link, so the scan never backtracks.
  const states = children.length;
  const move = new Int32Array(states * classes);
  const fail = new Int32Array(states);
  const outputs: (readonly number[] | null)[] = new Array<readonly number[] | null>(states).fill(null);
  const queue: number[] = [];
  for (const [cls, next] of children[0] ?? []) {
    move[cls] = next;
    queue.push(next);
  }
  for (let head = 0; head < queue.length; head += 1) {
    const state = queue[head] as number;
    const own = ends[state] ?? [];
    const inherited = outputs[fail[state] as number] ?? [];
    outputs[state] = own.length + inherited.length > 0 ? [...own, ...inherited] : null;
    for (let cls = 0; cls < classes; cls += 1) {
      const next = children[state]?.get(cls);
      const fallback = move[(fail[state] as number) * classes + cls] as number;
      if (next === undefined) {
        move[state * classes + cls] = fallback;
      } else {
        move[state * classes + cls] = next;
        fail[next] = fallback;
        queue.push(next);
      }
    }
  }
  // Read once per character of every message: 16-bit when the states fit (1,770 for the shipped
  // rules), so half the bytes compete for the cache.
  const moves = states <= 0xffff ? Uint16Array.from(move) : move;
  const lengths = Int32Array.from(bodies, (body) => body.length);
  const first = new Int32Array(unique.length);
  const foundIds = new Int32Array(unique.length);
  let foundCount = 0;

  return {
    literals: unique,
    found: () => foundIds.subarray(0, foundCount),
    firstPositions(text) {
      first.fill(-1);
      foundCount = 0;
      let missing = unique.length;
      let state = 0;
      for (let i = 0; i < text.length && missing > 0; i += 1) {
        const code = text.charCodeAt(i);
        // No literal holds a non-ASCII character, so none can match across one.
        state = code < ASCII ? (moves[state * classes + (classOf[code] as number)] as number) : 0;
        const found = outputs[state];
        if (found === null || found === undefined) continue;
        for (const id of found) {
          if (first[id] !== -1) continue;
          const start = i - (lengths[id] as number) + 1;
          if (atWordStart[id] === 1 && start > 0) {
            const before = text.charCodeAt(start - 1);
            if (before < ASCII && WORD_CHAR[before] === 1) continue;
          }
          first[id] = start;
          foundIds[foundCount++] = id;
          missing -= 1;
        }
      }
      return first;
    },
  };
}

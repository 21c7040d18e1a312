/**
 * Word-list rules matched by dictionary instead of regex: the text (in matchingForm) is cut into tokens,
 * runs of letters, digits, `_`, `'` and `-`, and each run of tokens that can start a phrase is looked up
 * among the phrases. Linear in the text, and the same on every regex engine.
 *
 * The lookup never builds a string: a character trie turns each token of the text into the id of a
 * word some phrase holds (or none), and a trie over those ids walks the phrases from each token. Cutting
 * the text into token strings and joining them into candidate phrases for a map lookup allocated every
 * token twice and was most of the time of matching the word rules.
 */
const TOKEN = /[a-z0-9_'-]+/g;
const EDGE_PUNCTUATION = /^['-]+|['-]+$/g;

/** The tokens of a text: quotes and dashes at a token's edges are not part of the word (`'fix'`, `--fix`). */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const [raw] of text.matchAll(TOKEN)) {
    const token = raw.replace(EDGE_PUNCTUATION, '');
    if (token !== '') tokens.push(token);
  }
  return tokens;
}

/** Most phrases one word-list entry may expand to: a bound on the index's memory. */
export const MAX_EXPANSION = 10_000;
const CHOICE = /\{([^{}]*)\}/;

/**
 * Expands a phrase template: each `{a|b|c}` stands for one of its choices, so
 * `{our|my} {code|app}` is four phrases. Throws when one entry would expand past MAX_EXPANSION.
 */
export function expandTemplate(template: string): string[] {
  let phrases = [template];
  while (phrases.some((phrase) => CHOICE.test(phrase))) {
    phrases = phrases.flatMap((phrase) => {
      const choice = CHOICE.exec(phrase);
      if (!choice) return [phrase];
      const [whole, inner = ''] = choice;
      return inner.split('|').map((option) => phrase.replace(whole, option.trim()));
    });
    if (phrases.length > MAX_EXPANSION) throw new Error(`"${template.slice(0, 60)}" expands to more than ${MAX_EXPANSION} phrases`);
  }
  return phrases;
}

/** Character code → its column in the word trie, or -1 for a character no token holds. */
const COLUMN = new Int8Array(128).fill(-1);
const TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_'-";
for (let column = 0; column < TOKEN_CHARS.length; column += 1) COLUMN[TOKEN_CHARS.charCodeAt(column)] = column;
const COLUMNS = TOKEN_CHARS.length;
const QUOTE = 39;
const DASH = 45;

/** A node of the phrase trie: the phrase its path spells, the rules that list it, the tokens that extend it. */
interface PhraseNode {
  readonly phrase: string;
  readonly owners: number[];
  readonly next: Map<number, PhraseNode>;
}

export interface PhraseIndex {
  /**
   * Word trie: state × column → next state (0: none; the root is state 1). 16-bit when the states fit,
   * as they do by far for the shipped rules: the table is read once per character, and at half the
   * bytes more of it is still in cache when the next message comes.
   */
  readonly words: Uint16Array | Int32Array;
  /** Word trie state → id of the word it ends, or -1. */
  readonly wordAt: Int32Array;
  /** Word id → the phrase trie's node for phrases starting with that word. */
  readonly first: readonly (PhraseNode | undefined)[];
}

export function buildPhraseIndex(rules: readonly { readonly index: number; readonly words: readonly string[] }[]): PhraseIndex {
  const wordIds = new Map<string, number>();
  const first: PhraseNode[] = [];
  const idOf = (word: string): number => {
    let id = wordIds.get(word);
    if (id === undefined) {
      id = wordIds.size;
      wordIds.set(word, id);
    }
    return id;
  };
  for (const { index, words } of rules) {
    for (const word of words) {
      const tokens = tokenize(word.toLowerCase());
      if (tokens.length === 0) continue;
      let node: PhraseNode | undefined;
      tokens.forEach((token, at) => {
        const id = idOf(token);
        const children = node === undefined ? null : node.next;
        let child = children === null ? first[id] : children.get(id);
        if (child === undefined) {
          child = { phrase: tokens.slice(0, at + 1).join(' '), owners: [], next: new Map() };
          if (children === null) first[id] = child;
          else children.set(id, child);
        }
        node = child;
      });
      if (node !== undefined && !node.owners.includes(index)) node.owners.push(index);
    }
  }

  let states = 2;
  let words = new Int32Array(states * COLUMNS);
  const ends: number[] = [-1, -1];
  for (const [word, id] of wordIds) {
    let state = 1;
    for (let at = 0; at < word.length; at += 1) {
      const column = COLUMN[word.charCodeAt(at)] as number;
      let next = words[state * COLUMNS + column] as number;
      if (next === 0) {
        next = states++;
        if (states * COLUMNS > words.length) {
          const grown = new Int32Array(words.length * 2);
          grown.set(words);
          words = grown;
        }
        ends.push(-1);
        words[state * COLUMNS + column] = next;
      }
      state = next;
    }
    ends[state] = id;
  }
  const used = words.subarray(0, states * COLUMNS);
  return { words: states <= 0xffff ? Uint16Array.from(used) : used.slice(), wordAt: Int32Array.from(ends), first };
}

/** Token ids of the text being matched, reused from call to call. */
let tokenIds = new Int32Array(256);

/** Rule index → the first phrase of that rule found in the text. */
export function matchPhrases(index: PhraseIndex, text: string, found: Map<number, string>): void {
  const { words, wordAt, first } = index;
  let count = 0;
  let at = 0;
  while (at < text.length) {
    let code = text.charCodeAt(at);
    if (code >= 128 || COLUMN[code] === -1) {
      at += 1;
      continue;
    }
    // One pass over the token: quotes and dashes at its start are skipped, the word trie is walked
    // over the rest, and the state after its last other character is the stripped token's.
    while (isEdgePunctuation(code)) {
      at += 1;
      code = at < text.length ? text.charCodeAt(at) : -1;
    }
    let state = 1;
    let ended = -1;
    while (code !== -1 && code < 128 && COLUMN[code] !== -1) {
      if (state !== 0) state = words[state * COLUMNS + (COLUMN[code] as number)] as number;
      if (!isEdgePunctuation(code)) ended = state;
      at += 1;
      code = at < text.length ? text.charCodeAt(at) : -1;
    }
    if (ended === -1) continue;
    if (count === tokenIds.length) {
      const grown = new Int32Array(count * 2);
      grown.set(tokenIds);
      tokenIds = grown;
    }
    tokenIds[count++] = ended === 0 ? -1 : (wordAt[ended] as number);
  }

  for (let start = 0; start < count; start += 1) {
    const id = tokenIds[start] as number;
    let node = id === -1 ? undefined : first[id];
    // The fullest phrase at a position is the one reported for each rule: "look for", not "look".
    let longest: PhraseNode[] | null = null;
    for (let end = start + 1; node !== undefined; end += 1) {
      if (node.owners.length > 0) (longest ??= []).push(node);
      if (node.next.size === 0 || end === count) break;
      const nextId = tokenIds[end] as number;
      node = nextId === -1 ? undefined : node.next.get(nextId);
    }
    if (longest !== null) reportLongest(longest, found);
  }
}

/**
 * `nodes` are the phrases found at one position, shortest first: each rule keeps its longest, in the
 * order the rule was first seen there, and is reported unless it was found at an earlier position.
 */
function reportLongest(nodes: readonly PhraseNode[], found: Map<number, string>): void {
  if (nodes.length === 1) {
    const [node] = nodes as [PhraseNode];
    for (const rule of node.owners) if (!found.has(rule)) found.set(rule, node.phrase);
    return;
  }
  const longest = new Map<number, string>();
  for (const node of nodes) for (const rule of node.owners) longest.set(rule, node.phrase);
  for (const [rule, match] of longest) if (!found.has(rule)) found.set(rule, match);
}

function isEdgePunctuation(code: number): boolean {
  return code === QUOTE || code === DASH;
}

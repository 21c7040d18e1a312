/**
 * Word-list rules matched by dictionary instead of regex: the text (in matchingForm) is cut into tokens,
 * runs of letters, digits, `_`, `'` and `-`, and each run of tokens that can start a phrase is looked up
 * among the phrases. Linear in the text, and the same on every regex engine.
 *
 * The lookup never builds a string: each token of the text is hashed as it is read and found in a small
 * open-addressing table of the words some phrase holds (or not), and a trie over those word ids walks the
 * phrases from each token. Cutting the text into token strings and joining them into candidate phrases
 * for a map lookup allocated every token twice and was most of the time of matching the word rules; a
 * character trie over the words (223 KB for the shipped rules, read once per character) cost ten times
 * its warm time when the message came after other work had taken the cache.
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

/** ASCII code → 1 for the characters tokens are made of. */
const TOKEN_CHAR = new Uint8Array(128);
for (const char of "abcdefghijklmnopqrstuvwxyz0123456789_'-") TOKEN_CHAR[char.charCodeAt(0)] = 1;
const QUOTE = 39;
const DASH = 45;

/** A node of the phrase trie: the phrase its path spells, the rules that list it, the tokens that extend it. */
interface PhraseNode {
  readonly phrase: string;
  readonly owners: number[];
  readonly next: Map<number, PhraseNode>;
}

/**
 * The words phrases hold, found by hash: two Int32 per slot, the word's hash and its id + 1 (0: empty),
 * at most half the slots used. 16 KB for the shipped rules' 965 words, so a message's lookups stay in cache.
 */
interface WordTable {
  readonly slots: Int32Array;
  readonly mask: number;
  /** The words' characters end to end; word `id` is chars[starts[id], starts[id + 1]). */
  readonly chars: Uint8Array;
  readonly starts: Int32Array;
  readonly longest: number;
}

export interface PhraseIndex {
  readonly words: WordTable;
  /** Word id → the phrase trie's node for phrases starting with that word. */
  readonly first: readonly (PhraseNode | undefined)[];
}

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;

function hashStep(hash: number, code: number): number {
  return Math.imul(hash ^ code, FNV_PRIME);
}

function buildWordTable(words: readonly string[]): WordTable {
  let size = 16;
  while (size < words.length * 2) size *= 2;
  const slots = new Int32Array(size * 2);
  const starts = new Int32Array(words.length + 1);
  const chars = new Uint8Array(words.reduce((total, word) => total + word.length, 0));
  let longest = 0;
  words.forEach((word, id) => {
    let hash = FNV_OFFSET;
    for (let at = 0; at < word.length; at += 1) {
      const code = word.charCodeAt(at);
      chars[(starts[id] as number) + at] = code;
      hash = hashStep(hash, code);
    }
    starts[id + 1] = (starts[id] as number) + word.length;
    longest = Math.max(longest, word.length);
    let slot = hash & (size - 1);
    while (slots[slot * 2 + 1] !== 0) slot = (slot + 1) & (size - 1);
    slots[slot * 2] = hash;
    slots[slot * 2 + 1] = id + 1;
  });
  return { slots, mask: size - 1, chars, starts, longest };
}

/** The id of the word text[start, end) whose hash is `hash`, or -1 when no phrase holds it. */
function wordIdOf(table: WordTable, text: string, start: number, end: number, hash: number): number {
  const length = end - start;
  if (length > table.longest) return -1;
  const { slots, mask, chars, starts } = table;
  for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
    const id = (slots[slot * 2 + 1] as number) - 1;
    if (id === -1) return -1;
    if (slots[slot * 2] !== hash) continue;
    const from = starts[id] as number;
    if ((starts[id + 1] as number) - from !== length) continue;
    let at = 0;
    while (at < length && chars[from + at] === text.charCodeAt(start + at)) at += 1;
    if (at === length) return id;
  }
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

  return { words: buildWordTable([...wordIds.keys()]), first };
}

/** Token ids of the text being matched, reused from call to call. */
let tokenIds = new Int32Array(256);

/** Rule index → the first phrase of that rule found in the text. */
export function matchPhrases(index: PhraseIndex, text: string, found: Map<number, string>): void {
  const { words, first } = index;
  let count = 0;
  let at = 0;
  while (at < text.length) {
    let code = text.charCodeAt(at);
    if (code >= 128 || TOKEN_CHAR[code] === 0) {
      at += 1;
      continue;
    }
    // One pass over the token: quotes and dashes at its start are skipped, the rest is hashed, and the
    // hash after its last other character is the stripped token's.
    while (isEdgePunctuation(code)) {
      at += 1;
      code = at < text.length ? text.charCodeAt(at) : -1;
    }
    const start = at;
    let hash = FNV_OFFSET;
    let ended = -1;
    let endedHash = 0;
    while (code !== -1 && code < 128 && TOKEN_CHAR[code] === 1) {
      hash = hashStep(hash, code);
      at += 1;
      if (!isEdgePunctuation(code)) {
        ended = at;
        endedHash = hash;
      }
      code = at < text.length ? text.charCodeAt(at) : -1;
    }
    if (ended === -1) continue;
    if (count === tokenIds.length) {
      const grown = new Int32Array(count * 2);
      grown.set(tokenIds);
      tokenIds = grown;
    }
    tokenIds[count++] = wordIdOf(words, text, start, ended, endedHash);
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

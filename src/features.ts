/**
 * The scorer's view of a message: named binary features from the rules' evidence, the wording and the
 * message's shape. Each has a plain name (`w:calendar`, `r:operation.fix`) that an explanation can show;
 * the scorer reads a feature by its name's hash, so names are made only when shown.
 */
import type { Category } from './categories.js';
import { fnv1a, type HashedFeatures } from './scorer.js';
import type { Step } from './decision.js';
import type { Lexicon } from './lexicon.js';

export interface RuleEvidence {
  /** Every rule that matched (triggers and signals), before cancelled ones were dropped. */
  readonly matched: readonly { readonly rule: string; readonly category: Category; readonly match: string }[];
  /** Categories of the triggers the message itself took back ("don't deploy yet"). */
  readonly cancelled: readonly Category[];
  /** What the rules alone decided. */
  readonly step: Step;
  readonly question: boolean;
  readonly external: boolean;
  readonly distinctTriggers: number;
  /** The text an edit hands over ("summarize this: …", "a script that …"), or null: the wording features skip it. */
  readonly handedOver: { readonly start: number; readonly end: number } | null;
}

/** Scripts written without spaces between words: their words are read as character n-grams. */
const UNSPACED_CLASS = '[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}]';
export const UNSPACED = new RegExp(UNSPACED_CLASS, 'u');
const TOKEN = new RegExp(`${UNSPACED_CLASS}+|[\\p{L}\\p{N}_]+(?:'\\p{L}+)?|[?:!$\`>#@/.=|~-]`, 'gu');
const SCRIPTS: readonly (readonly [string, RegExp])[] = [
  ['han', /\p{Script=Han}/u],
  ['kana', /[\p{Script=Hiragana}\p{Script=Katakana}]/u],
  ['hangul', /\p{Script=Hangul}/u],
  ['cyrillic', /\p{Script=Cyrillic}/u],
  ['arabic', /\p{Script=Arabic}/u],
  ['devanagari', /\p{Script=Devanagari}/u],
  ['greek', /\p{Script=Greek}/u],
];
const NON_ASCII = /[^\x00-\x7f]/;
/** Words read at each end of a long message: a request sits at the start or the end of a paste. */
const HEAD_TOKENS = 160;
const TAIL_TOKENS = 80;
/** A long word also counts by its first letters, so inflections share evidence (deploying, deployed). */
const PREFIX_LETTERS = 5;

/** A count's bucket: the names `name:0` … `name:edges.length`, made once; a value above the i-th edge and no other is in bucket i + 1. */
function buckets(name: string, edges: readonly number[]): (value: number) => string {
  const names = Array.from({ length: edges.length + 1 }, (_, index) => `${name}:${index}`);
  return (value) => {
    let index = 0;
    while (index < edges.length && value > (edges[index] as number)) index += 1;
    return names[index] as string;
  };
}
const triggersBucket = buckets('triggers', [0, 1, 2]);
const linesBucket = buckets('lines', [1, 5]);
const lengthBucket = buckets('len', [2, 5, 12, 30, 80]);

/** Splits a message into prose and the content of its code fences. */
function splitFences(text: string): { prose: string; fenced: number } {
  if (!text.includes('```')) return { prose: text, fenced: 0 };
  const pieces = text.split('```');
  let prose = '';
  let fenced = 0;
  pieces.forEach((piece, index) => {
    if (index % 2 === 0) prose += piece;
    else {
      prose += ' ``` ';
      fenced += piece.length;
    }
  });
  return { prose, fenced };
}

/** Characters below U+0370 belong to none of SCRIPTS (nor to UNSPACED): most messages need no script test. */
const SCRIPT_CHARACTER = /[^\u0000-\u036f]/;
const PUNCTUATION_TOKENS = '?:!$`>#@/.=|~-';

const isAsciiLetter = (code: number): boolean => (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
const isAsciiWordChar = (code: number): boolean => isAsciiLetter(code) || (code >= 48 && code <= 57) || code === 95;

/** The first HEAD_TOKENS tokens, then the last TAIL_TOKENS of the rest, with "…" between. */
class TokenWindow {
  private readonly head: string[] = [];
  private readonly tail: string[] = [];

  add(token: string): void {
    if (this.head.length < HEAD_TOKENS) this.head.push(token);
    else {
      this.tail.push(token);
      if (this.tail.length > 2 * TAIL_TOKENS) this.tail.splice(0, TAIL_TOKENS);
    }
  }

  tokens(): string[] {
    return this.tail.length > 0 ? [...this.head, '…', ...this.tail.slice(-TAIL_TOKENS)] : this.head;
  }
}

/**
 * TOKEN's tokens of an ASCII text, in order, without the regex and its match objects: for ASCII,
 * `[\p{L}\p{N}_]` is `[A-Za-z0-9_]` and `\p{L}` is `[A-Za-z]`.
 */
function asciiTokens(text: string, window: TokenWindow): void {
  let at = 0;
  while (at < text.length) {
    const code = text.charCodeAt(at);
    if (isAsciiWordChar(code)) {
      let end = at + 1;
      while (end < text.length && isAsciiWordChar(text.charCodeAt(end))) end += 1;
      if (text.charCodeAt(end) === 39 && isAsciiLetter(text.charCodeAt(end + 1))) {
        end += 2;
        while (end < text.length && isAsciiLetter(text.charCodeAt(end))) end += 1;
      }
      window.add(text.slice(at, end));
      at = end;
    } else {
      if (PUNCTUATION_TOKENS.includes(text.charAt(at))) window.add(text.charAt(at));
      at += 1;
    }
  }
}

/** The tokens the wording features read: the first HEAD_TOKENS, then "…" and the last TAIL_TOKENS when there are more. */
export function tokensOf(prose: string): string[] {
  const window = new TokenWindow();
  if (NON_ASCII.test(prose)) for (const [token] of prose.matchAll(TOKEN)) window.add(token);
  else asciiTokens(prose, window);
  return window.tokens();
}

function lineCount(text: string): number {
  let lines = 1;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines += 1;
  return lines;
}

const LETTER_OR_DIGIT = /\p{L}|\p{N}/u;

/** A one-character token counts as a word when it is a letter or a digit. */
function isWord(token: string): boolean {
  if (token.length > 1) return true;
  const code = token.charCodeAt(0);
  return code < 128 ? isAsciiLetter(code) || (code >= 48 && code <= 57) : LETTER_OR_DIGIT.test(token);
}

/**
 * A message's features, each listed once in the order first met, as the scorer reads them: by the
 * FNV-1a hash of its name. `wording` lists the features of the message's words (f1:, f2:, w:, k:),
 * which the context model reads again.
 */
export interface MessageFeatures extends HashedFeatures {
  readonly wording: readonly number[];
}

/** The prefixes of features made of a prefix and a part, with their hashes. */
const PREFIXES = ['step:', 'r:', 'c:', 'qc:', 'prose:', 'pasted:', 'x:', 'script:', 'f1:', 'f2:', 'k:', 'w:', 'p:', 'b:'] as const;
type Prefix = (typeof PREFIXES)[number];
const PREFIX_HASHES = Object.fromEntries(PREFIXES.map((prefix) => [prefix, fnv1a(prefix)])) as Record<Prefix, number>;

/**
 * The open-addressing tables behind FeatureCollector, shared by every call (one message is collected at
 * a time), smallest first: a message starts in the first and moves up a size when it fills half of one.
 * Slot i is the pair [generation, index + 1 into the collector's features] at 2i, and counts only while it
 * holds the collector's generation, so nothing is cleared between messages. Shared, because a table per
 * message (allocated, then grown for most messages) cost more than the hashing; small, and a slot's two
 * numbers side by side, because between the requests of a gateway the table has left the cache, and
 * each of a message's features reads it at a random place.
 */
const tables: Int32Array[] = [new Int32Array(2 * 256)];
let generation = 0;

/**
 * A set of features keyed by their FNV-1a hash (an equal hash is checked against the name's parts). A
 * feature written as a prefix and parts continues the prefix's hash over the parts and keeps the parts:
 * its name is made only when asked for (an explanation shows five), never read character by character.
 * Two names are equal exactly when their prefix and parts are: no part holds a space, and no plain name
 * starts with a prefix.
 */
class FeatureCollector implements MessageFeatures {
  readonly hashes: number[] = [];
  readonly wording: number[] = [];
  private readonly prefixes: (Prefix | '')[] = [];
  private readonly firsts: string[] = [];
  private readonly seconds: (string | null)[] = [];
  private readonly generation: number;
  private level = 0;
  private table = tables[0] as Int32Array;

  constructor() {
    generation = generation === 0x7fffffff ? 1 : generation + 1;
    if (generation === 1) for (const table of tables) table.fill(0);
    this.generation = generation;
  }

  name(index: number): string {
    const prefix = this.prefixes[index] as Prefix | '';
    const second = this.seconds[index];
    return second === null ? prefix + (this.firsts[index] as string) : `${prefix}${this.firsts[index] as string} ${second}`;
  }

  add(name: string): void {
    this.insert('', name, null, fnv1a(name));
  }

  /** Adds `prefix + part`. */
  addJoined(prefix: Prefix, part: string): boolean {
    return this.insert(prefix, part, null, fnv1a(part, PREFIX_HASHES[prefix]));
  }

  /** Adds `prefix + first + ' ' + second`. */
  addPair(prefix: Prefix, first: string, second: string): boolean {
    return this.insert(prefix, first, second, fnv1a(second, fnv1a(' ', fnv1a(first, PREFIX_HASHES[prefix]))));
  }

  /** Adds a feature of the message's words. */
  addWording(prefix: Prefix, first: string, second: string | null = null): void {
    if (second === null ? this.addJoined(prefix, first) : this.addPair(prefix, first, second)) this.wording.push(this.hashes.length - 1);
  }

  /** Whether the feature was new. */
  private insert(prefix: Prefix | '', first: string, second: string | null, hash: number): boolean {
    const mine = this.generation;
    const table = this.table;
    const mask = table.length / 2 - 1;
    let slot = hash & mask;
    while (table[2 * slot] === mine) {
      const held = (table[2 * slot + 1] as number) - 1;
      if (this.hashes[held] === hash && this.prefixes[held] === prefix && this.firsts[held] === first && this.seconds[held] === second) return false;
      slot = (slot + 1) & mask;
    }
    this.hashes.push(hash);
    this.prefixes.push(prefix);
    this.firsts.push(first);
    this.seconds.push(second);
    table[2 * slot] = mine;
    table[2 * slot + 1] = this.hashes.length;
    if (this.hashes.length * 2 > mask + 1) this.moveUp();
    return true;
  }

  /** Into the next size of table, which is made the first time a message needs it. */
  private moveUp(): void {
    const mine = this.generation;
    this.level += 1;
    const table = (tables[this.level] ??= new Int32Array(2 * this.table.length));
    this.table = table;
    const mask = table.length / 2 - 1;
    this.hashes.forEach((hash, at) => {
      let free = hash & mask;
      while (table[2 * free] === mine) free = (free + 1) & mask;
      table[2 * free] = mine;
      table[2 * free + 1] = at + 1;
    });
  }
}

/** The tokens with each one the lexicon knows read as its English word; the same array when none is. */
function inEnglish(tokens: string[], lexicon: Lexicon, unspaced: (token: string) => boolean): string[] {
  let read: string[] | null = null;
  tokens.forEach((token, at) => {
    const english = unspaced(token) ? undefined : lexicon.english(token);
    if (english === undefined) return;
    read ??= [...tokens];
    read[at] = english;
  });
  return read ?? tokens;
}

/**
 * The features of one message. `text` is the normalised window the rules read (lower case, marks and
 * invisible characters gone, look-alikes folded). A word the lexicon knows is read as its English
 * counterpart, and counts as itself too.
 */
export function hashedFeaturesOf(text: string, evidence: RuleEvidence, lexicon: Lexicon | null = null): MessageFeatures {
  const features = new FeatureCollector();
  const add = (feature: string) => features.add(feature);
  const joined = (prefix: Prefix, part: string) => features.addJoined(prefix, part);

  joined('step:', evidence.step);
  add(triggersBucket(evidence.distinctTriggers));
  if (evidence.question) add('question');
  if (evidence.external) add('external');
  const { prose, fenced } = splitFences(text);
  for (const { rule, category, match } of evidence.matched) {
    joined('r:', rule);
    joined('c:', category);
    if (evidence.question) joined('qc:', category);
    // Evidence that exists only inside pasted code is the paste's, not the request's.
    if (fenced > 0) joined(prose.includes(match) ? 'prose:' : 'pasted:', category);
  }
  for (const category of evidence.cancelled) joined('x:', category);

  add(fenced === 0 ? 'fence:none' : fenced * 2 > text.length ? 'fence:most' : 'fence:some');
  add(linesBucket(lineCount(text)));
  const scripts = SCRIPT_CHARACTER.test(text);
  if (scripts) for (const [name, pattern] of SCRIPTS) if (pattern.test(text)) joined('script:', name);
  if (text.endsWith('?')) add('ends:?');

  // The words of text handed over for an edit are the text's: only the instruction's are read.
  const { handedOver } = evidence;
  if (handedOver !== null) add('handed-over');
  const tokens = tokensOf(handedOver === null ? prose : splitFences(handedOver.end === text.length ? text.slice(0, handedOver.start) : `${text.slice(0, handedOver.start)}\n${text.slice(handedOver.end)}`).prose);
  const unspaced = (token: string) => scripts && UNSPACED.test(token);
  const read = lexicon === null ? tokens : inEnglish(tokens, lexicon, unspaced);
  let words = 0;
  let first: string | undefined;
  let second: string | undefined;
  for (const token of read) {
    if (!isWord(token)) continue;
    if (words === 0) first = token;
    else if (words === 1) second = token;
    words += 1;
  }
  add(lengthBucket(words));
  if (first !== undefined) {
    features.addWording('f1:', first);
    if (second !== undefined) features.addWording('f2:', first, second);
  }
  const addWord = (word: string) => {
    features.addWording('w:', word);
    if (word.length > PREFIX_LETTERS + 1) joined('p:', word.slice(0, PREFIX_LETTERS));
  };
  let previous: string | undefined;
  read.forEach((token, position) => {
    if (unspaced(token)) {
      // No spaces between words: characters and character pairs stand in for words.
      const chars = Array.from(token);
      chars.forEach((char, at) => {
        features.addWording('k:', char);
        const next = chars[at + 1];
        if (next !== undefined) features.addWording('k:', char + next);
      });
      lexicon?.withinRun(token, (english) => features.addWording('w:', english));
    } else {
      addWord(token);
      const own = tokens[position] as string;
      if (own !== token) addWord(own);
    }
    if (previous !== undefined) features.addPair('b:', previous, token);
    previous = token;
  });
  return features;
}

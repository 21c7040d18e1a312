/**
 * The scorer's view of a message: named binary features from the rules' evidence, the wording and the
 * message's shape. Names are plain strings (`w:calendar`, `r:operation.fix`) so an explanation can show
 * them; the scorer hashes them into its weight table.
 */
import type { Category } from './categories.js';
import type { Step } from './decision.js';

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
}

/** Scripts written without spaces between words: their words are read as character n-grams. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
const TOKEN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+|[\p{L}\p{N}_]+(?:'\p{L}+)?|[?:!$`>#@/.=|~-]/gu;
const SCRIPTS: readonly (readonly [string, RegExp])[] = [
  ['han', /\p{Script=Han}/u],
  ['kana', /[\p{Script=Hiragana}\p{Script=Katakana}]/u],
  ['hangul', /\p{Script=Hangul}/u],
  ['cyrillic', /\p{Script=Cyrillic}/u],
  ['arabic', /\p{Script=Arabic}/u],
  ['devanagari', /\p{Script=Devanagari}/u],
  ['greek', /\p{Script=Greek}/u],
];
/** Words read at each end of a long message: a request sits at the start or the end of a paste. */
const HEAD_TOKENS = 160;
const TAIL_TOKENS = 80;
/** A long word also counts by its first letters, so inflections share evidence (deploying, deployed). */
const PREFIX_LETTERS = 5;

function bucket(value: number, edges: readonly number[], name: string): string {
  let index = 0;
  while (index < edges.length && value > (edges[index] ?? 0)) index += 1;
  return `${name}:${index}`;
}

/** Splits a message into prose and the content of its code fences. */
function splitFences(text: string): { prose: string; fenced: number } {
  const pieces = text.split('```');
  if (pieces.length === 1) return { prose: text, fenced: 0 };
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

function tokensOf(prose: string): string[] {
  const tokens: string[] = [];
  const tail: string[] = [];
  for (const [token] of prose.matchAll(TOKEN)) {
    if (tokens.length < HEAD_TOKENS) tokens.push(token);
    else {
      tail.push(token);
      if (tail.length > 2 * TAIL_TOKENS) tail.splice(0, TAIL_TOKENS);
    }
  }
  return tail.length > 0 ? [...tokens, '…', ...tail.slice(-TAIL_TOKENS)] : tokens;
}

/**
 * The features of one message. `text` is the normalised window the rules read (lower case, marks and
 * invisible characters gone, look-alikes folded). Each feature is listed once.
 */
export function featuresOf(text: string, evidence: RuleEvidence): string[] {
  const features = new Set<string>();
  const add = (feature: string) => features.add(feature);

  add(`step:${evidence.step}`);
  add(bucket(evidence.distinctTriggers, [0, 1, 2], 'triggers'));
  if (evidence.question) add('question');
  if (evidence.external) add('external');
  const { prose, fenced } = splitFences(text);
  for (const { rule, category, match } of evidence.matched) {
    add(`r:${rule}`);
    add(`c:${category}`);
    if (evidence.question) add(`qc:${category}`);
    // Evidence that exists only inside pasted code is the paste's, not the request's.
    if (fenced > 0) add(prose.includes(match) ? `prose:${category}` : `pasted:${category}`);
  }
  for (const category of evidence.cancelled) add(`x:${category}`);

  add(fenced === 0 ? 'fence:none' : fenced * 2 > text.length ? 'fence:most' : 'fence:some');
  add(bucket(text.split('\n').length, [1, 5], 'lines'));
  for (const [name, pattern] of SCRIPTS) if (pattern.test(text)) add(`script:${name}`);
  if (text.endsWith('?')) add('ends:?');

  const tokens = tokensOf(prose);
  const words = tokens.filter((token) => token.length > 1 || /\p{L}|\p{N}/u.test(token));
  add(bucket(words.length, [2, 5, 12, 30, 80], 'len'));
  const [first, second] = words;
  if (first !== undefined) {
    add(`f1:${first}`);
    if (second !== undefined) add(`f2:${first} ${second}`);
  }
  let previous: string | undefined;
  for (const token of tokens) {
    if (UNSPACED.test(token)) {
      // No spaces between words: characters and character pairs stand in for words.
      const chars = Array.from(token);
      chars.forEach((char, at) => {
        add(`k:${char}`);
        const next = chars[at + 1];
        if (next !== undefined) add(`k:${char}${next}`);
      });
    } else {
      add(`w:${token}`);
      if (token.length > PREFIX_LETTERS + 1) add(`p:${token.slice(0, PREFIX_LETTERS)}`);
    }
    if (previous !== undefined) add(`b:${previous} ${token}`);
    previous = token;
  }
  return [...features];
}

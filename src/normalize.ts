/**
 * Text normalisation applied before any rule sees a message, so evasions such as `ｆｉｘ`, `ﬁx`,
 * `f\u200bix`, `de\u00adploy`, `f̸i̸x̸` or a Cyrillic `і` inside `fіx` all read as plain `fix`.
 *
 * The replacements below are single character classes, linear in the input on any engine.
 */

// Invisible and format characters (zero-width space and joiners, word joiner, BOM, soft hyphen, bidi
// controls, tag characters: all of category Cf), every combining mark (M) and the Hangul fillers that
// render as nothing.
const INVISIBLE_OR_MARK = /[\p{Cf}\p{M}\u115f\u1160\u3164\uffa0]/gu;
/**
 * A run of combining marks longer than any script writes: String.prototype.normalize puts a run in
 * canonical order in time quadratic in its length (a 256 KB message of marks took 35 s). Every mark is
 * removed after normalising, so dropping a run's marks past the eighth first changes nothing else.
 * One mark at a time, behind a lookbehind: a quantifier over a run of millions overflows V8's stack.
 */
const LONG_MARK_RUN = /(?<=\p{M}{8})\p{M}/gu;
// Runs of two or more, and single white space other than a plain space: a lone space stays as it is,
// so prose is not rewritten character by character.
const SPACE_RUN = /[^\S\n]{2,}|[^\S\n ]/g;
const SINGLE_QUOTE = /[\u2018\u2019\u201a\u201b\u02bc\u2032\u2039\u203a]/g;
const DOUBLE_QUOTE = /[\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb]/g;
const NON_ASCII = /[^\x00-\x7f]/;
const ASCII_WORD = /^[a-z]+$/;

/**
 * Look-alike letter → the Latin letter it imitates. A second letter is an alternate reading: Cyrillic
 * `у` looks like `y`, but `rуn` means `run`.
 */
export type Lookalikes = ReadonlyMap<string, string>;

/**
 * The text rules match against: NFKC, lower case, accents and other combining marks removed, invisible
 * characters dropped, typographic quotes as ASCII quotes, line breaks as `\n`, every other run of white
 * space as one plain space, trimmed, and look-alike letters folded to Latin (see `foldLookalikes`).
 */
export function normalizeText(text: string, lookalikes: Lookalikes = new Map()): string {
  return foldLookalikes(cleanText(text), lookalikes);
}

const NON_ASCII_CHAR = /[^\x00-\x7f]/gu;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
/** Stands for any character that is neither ASCII nor a letter or digit (emoji, dashes, symbols). */
export const OTHER_SYMBOL = '\x1a';

/**
 * The form rules match against: normalised text in ASCII, every other letter or digit as `_` (still a
 * word character, so a word boundary next to Arabic or Chinese letters is a boundary) and every other
 * character as OTHER_SYMBOL. Rule patterns then need only ASCII classes, which keeps their automata
 * small: with Unicode classes, re2js spent 100x longer per message.
 */
export function matchingForm(normalized: string): string {
  if (!NON_ASCII.test(normalized)) return normalized;
  return normalized.replace(NON_ASCII_CHAR, (ch) => (LETTER_OR_DIGIT.test(ch) ? '_' : OTHER_SYMBOL));
}

/** Every step of normalizeText but the look-alike folding. */
export function cleanText(text: string): string {
  return joinCleaned(cleanCharacters(text));
}

/**
 * The character-by-character part of cleanText: NFKC, lower case, marks and invisible characters
 * dropped, quotes and line breaks made plain. It never looks past a character's neighbours, so a long
 * text can be cleaned in pieces and the pieces joined with joinCleaned.
 */
export function cleanCharacters(text: string): string {
  // ASCII holds no mark, invisible character or typographic quote, and both normal forms leave it as
  // it is: lower case and plain line breaks are all there is to do.
  if (!NON_ASCII.test(text)) return plainLineBreaks(text.toLowerCase());
  const cleaned = text
    .replace(LONG_MARK_RUN, '')
    .normalize('NFKC')
    .toLowerCase()
    .normalize('NFD')
    .replace(INVISIBLE_OR_MARK, '')
    .replace(SINGLE_QUOTE, "'")
    .replace(DOUBLE_QUOTE, '"');
  return plainLineBreaks(cleaned);
}

const LINE_BREAK_CHAR = /[\r\v\f\x85\u2028\u2029]/;
/** Characters of output turned into a string at a time (String.fromCharCode takes them as arguments). */
const CHUNK = 8192;

/**
 * Every line break (CRLF, CR, VT, FF, NEL, LS, PS) as `\n`, in one pass over the character codes. A
 * global regex replace costs far more than linear time on V8 once a long text holds hundreds of
 * thousands of matches (1 MB of CRLF: 80 ms, against 10 ms here).
 */
function plainLineBreaks(text: string): string {
  if (!LINE_BREAK_CHAR.test(text)) return text;
  const out = new Uint16Array(text.length);
  let length = 0;
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at);
    if (code === 13) {
      out[length++] = 10;
      if (text.charCodeAt(at + 1) === 10) at += 1;
    } else {
      out[length++] = code === 11 || code === 12 || code === 0x85 || code === 0x2028 || code === 0x2029 ? 10 : code;
    }
  }
  let result = '';
  for (let from = 0; from < length; from += CHUNK) result += String.fromCharCode(...out.subarray(from, Math.min(length, from + CHUNK)));
  return result;
}

/** The whole-text part of cleanText: letters spaced out read as words, white space folded, trimmed. */
export function joinCleaned(text: string): string {
  return joinSpacedLetters(text).replace(SPACE_RUN, ' ').trim();
}

const SPACED_LETTERS = /(?:^|\s)\p{L}[^\S\n]+\p{L}[^\S\n]+\p{L}(?:\s|$)/u;
/** Fewest single letters in a row that read as a spaced-out word rather than initials or a list. */
const MIN_SPACED_LETTERS = 4;

/**
 * `p u s h  t o  m a i n` → `push to main`: in a run of single letters, those one white-space character
 * apart are one word and a wider gap separates words. Punctuation may open the run's first letter and
 * close its last (`(r e s t a r t)`, `d o  i t!`). Shorter runs (`a b c`, `x y`) stay as they are. A
 * run is read across gaps of any width, and single letters it would leave standing in a row are one
 * word too (`a  b  c  d` → `abcd`): once white space is folded they would be such a run, and reading
 * the text again must not change it. Linear: one pass over the space-separated pieces.
 */
function joinSpacedLetters(text: string): string {
  if (!SPACED_LETTERS.test(text)) return text;
  const pieces = text.split(/([^\S\n]+)/);
  // pieces alternate: text, gap, text, gap, …
  const out: string[] = [];
  let index = 0;
  while (index < pieces.length) {
    let end = index;
    if (opensRun(pieces[index] ?? '')) {
      while (pieces[end + 1] !== undefined && isSingleLetter(pieces[end + 2] ?? '')) end += 2;
      if (pieces[end + 1] !== undefined && CLOSING_LETTER.test(pieces[end + 2] ?? '')) end += 2;
    }
    if (end > index && (end - index) / 2 + 1 >= MIN_SPACED_LETTERS) {
      out.push(spacedWords(pieces.slice(index, end + 1)));
      index = end + 1;
    } else {
      out.push(pieces[index] ?? '');
      index += 1;
    }
  }
  return out.join('');
}

/** A run of single letters and the gaps between them (letter, gap, letter, …) as the words it spells. */
function spacedWords(run: readonly string[]): string {
  const words: string[] = [];
  let word = run[0] ?? '';
  for (let at = 1; at < run.length; at += 2) {
    if ((run[at] ?? '').length === 1) word += run[at + 1] ?? '';
    else {
      words.push(word);
      word = run[at + 1] ?? '';
    }
  }
  words.push(word);
  const spelled: string[] = [];
  let singles: string[] = [];
  const flush = () => {
    if (singles.length >= MIN_SPACED_LETTERS) spelled.push(singles.join(''));
    else spelled.push(...singles);
    singles = [];
  };
  for (const each of words) {
    if (isSingleLetter(each) || OPENING_LETTER.test(each) || CLOSING_LETTER.test(each)) singles.push(each);
    else {
      flush();
      spelled.push(each);
    }
  }
  flush();
  return spelled.join(' ');
}

/** A run's first letter may come after punctuation, its last before it: `(r`, `t!`. */
const OPENING_LETTER = /^\p{P}{1,3}\p{L}$/u;
const CLOSING_LETTER = /^\p{L}\p{P}{1,3}$/u;
const opensRun = (piece: string): boolean => isSingleLetter(piece) || OPENING_LETTER.test(piece);

const SINGLE_LETTER = /^\p{L}$/u;
const isSingleLetter = (piece: string): boolean => piece.length <= 2 && SINGLE_LETTER.test(piece);

/**
 * Folds Cyrillic and Greek letters that look Latin (`і`, `е`, `о` …) to their Latin twins, but only
 * inside a word that mixes them with Latin letters, or is made of look-alikes alone in a text with no
 * Cyrillic or Greek word of its own: `dеlete` becomes `delete`, `рор` alone becomes `pop`, while an
 * ordinary Russian or Greek word is left as it is, short ones too (`на`, `с`, `о` in "найди на сайте").
 * `reading` 1 takes each letter's alternate reading where it has one.
 */
export function foldLookalikes(text: string, lookalikes: Lookalikes, reading: 0 | 1 = 0): string {
  if (!NON_ASCII.test(text)) return text;
  let native: boolean | undefined;
  // Only a word holding a letter other than a-z can change, and in most texts such words are few:
  // each is found from its first such letter (a-z before it belong to it too), and read to its end
  // by one sticky match. Calling back for every word of a long paste cost far more than folding.
  let folded = '';
  let copied = 0;
  NOT_LOWER_ASCII.lastIndex = 0;
  for (let found = NOT_LOWER_ASCII.exec(text); found !== null; found = NOT_LOWER_ASCII.exec(text)) {
    const at = found.index;
    LETTERS_HERE.lastIndex = at;
    const letters = LETTERS_HERE.exec(text);
    if (letters === null) continue;
    let start = letters.index;
    while (start > 0 && isLowerAscii(text.charCodeAt(start - 1))) start -= 1;
    const end = LETTERS_HERE.lastIndex;
    const word = text.slice(start, end);
    const changed = foldWord(word, lookalikes, reading, () => (native ??= hasNativeLetter(text, lookalikes)));
    if (changed !== word) {
      folded += text.slice(copied, start) + changed;
      copied = end;
    }
    NOT_LOWER_ASCII.lastIndex = end;
  }
  return copied === 0 ? text : folded + text.slice(copied);
}

/** A character that is not a-z nor any other ASCII but A-Z: where a word that folding may change can start. */
const NOT_LOWER_ASCII = /[A-Z]|[^\x00-\x7f]/g;
/** The run of letters from here. */
const LETTERS_HERE = /\p{L}+/uy;
const isLowerAscii = (code: number): boolean => code >= 97 && code <= 122;

/** Whether `text` holds a Cyrillic or Greek letter with no Latin twin: it is written in that script. */
function hasNativeLetter(text: string, lookalikes: Lookalikes): boolean {
  for (const [letter] of text.matchAll(CYRILLIC_OR_GREEK)) if (!lookalikes.has(letter)) return true;
  return false;
}
const CYRILLIC_OR_GREEK = /[\p{Script=Cyrillic}\p{Script=Greek}]/gu;

/** One word (a run of letters) as foldLookalikes leaves it; `native` says whether the text is written in Cyrillic or Greek. */
function foldWord(word: string, lookalikes: Lookalikes, reading: 0 | 1, native: () => boolean): string {
  if (ASCII_WORD.test(word)) return word;
  const letters = Array.from(word);
  const mixed = letters.some((ch) => ch >= 'a' && ch <= 'z');
  if (!mixed && (!letters.every((ch) => lookalikes.has(ch)) || native())) return word;
  return letters.map((ch) => {
    const latin = lookalikes.get(ch);
    return latin === undefined ? ch : (latin[reading] ?? latin[0]);
  }).join('');
}

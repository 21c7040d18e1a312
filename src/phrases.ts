/**
 * Word-list rules matched by dictionary instead of regex: the text (in matchingForm) is cut into tokens,
 * runs of letters, digits, `_`, `'` and `-`, and each run of tokens that can start a phrase is looked up
 * in a map of phrases. Linear in the text, and the same on every regex engine.
 */
const TOKEN = /[a-z0-9_'-]+/g;
const EDGE_PUNCTUATION = /^['-]+|['-]+$/g;

export interface PhraseIndex {
  /** Phrase (tokens joined by one space) → indexes of the rules that list it. */
  readonly phrases: ReadonlyMap<string, readonly number[]>;
  /** Every proper prefix of a phrase, so a lookup stops as soon as no phrase can follow. */
  readonly prefixes: ReadonlySet<string>;
}

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

export function buildPhraseIndex(rules: readonly { readonly index: number; readonly words: readonly string[] }[]): PhraseIndex {
  const phrases = new Map<string, number[]>();
  const prefixes = new Set<string>();
  for (const { index, words } of rules) {
    for (const word of words) {
      const tokens = tokenize(word.toLowerCase());
      if (tokens.length === 0) continue;
      const phrase = tokens.join(' ');
      const owners = phrases.get(phrase) ?? [];
      if (!owners.includes(index)) owners.push(index);
      phrases.set(phrase, owners);
      for (let length = 1; length < tokens.length; length += 1) prefixes.add(tokens.slice(0, length).join(' '));
    }
  }
  return { phrases, prefixes };
}

/** Rule index → the first phrase of that rule found in the text. */
export function matchPhrases(index: PhraseIndex, text: string, found: Map<number, string>): void {
  const tokens = tokenize(text);
  const longest = new Map<number, string>();
  for (let start = 0; start < tokens.length; start += 1) {
    let phrase = '';
    longest.clear();
    for (let end = start; end < tokens.length; end += 1) {
      phrase = end === start ? (tokens[start] as string) : `${phrase} ${tokens[end]}`;
      // The fullest phrase at a position is the one reported: "look for", not "look".
      for (const rule of index.phrases.get(phrase) ?? []) longest.set(rule, phrase);
      if (!index.prefixes.has(phrase)) break;
    }
    for (const [rule, match] of longest) if (!found.has(rule)) found.set(rule, match);
  }
}

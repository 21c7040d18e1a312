import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultRuleSet } from '../../src/index.js';
import { buildPhraseIndex, expandTemplate, matchPhrases, tokenize } from '../../src/phrases.js';

/** The plain way: every run of tokens joined with spaces and looked up in a map of phrases. */
function naiveMatcher(rules: readonly { index: number; words: readonly string[] }[]): (text: string) => Map<number, string> {
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
  return (text) => {
    const found = new Map<number, string>();
    const tokens = tokenize(text);
    for (let start = 0; start < tokens.length; start += 1) {
      let phrase = '';
      const longest = new Map<number, string>();
      for (let end = start; end < tokens.length; end += 1) {
        phrase = end === start ? (tokens[start] as string) : `${phrase} ${tokens[end]}`;
        for (const rule of phrases.get(phrase) ?? []) longest.set(rule, phrase);
        if (!prefixes.has(phrase)) break;
      }
      for (const [rule, match] of longest) if (!found.has(rule)) found.set(rule, match);
    }
    return found;
  };
}

const RULES = [
  { index: 0, words: ['look', 'look for', 'look for it', "don't"] },
  { index: 1, words: ['look for', 'for it', '--fix', "'quoted'"] },
  { index: 2, words: ['it', 'a-b', 'x_y', '9'] },
  { index: 5, words: ['look it up', 'up'] },
];

describe('matchPhrases', () => {
  it('reports each rule\'s fullest phrase at its first position', () => {
    const found = new Map<number, string>();
    matchPhrases(buildPhraseIndex(RULES), "please look for it, then --fix 'quoted' a-b", found);
    expect(found).toEqual(new Map([[0, 'look for it'], [1, 'look for'], [2, 'it']]));
  });

  it('agrees with joining tokens and looking them up, on any text', () => {
    const index = buildPhraseIndex(RULES);
    const naiveMatch = naiveMatcher(RULES);
    const piece = fc.constantFrom('look', 'for', 'it', 'up', "don't", '--fix', "'quoted'", 'a-b', 'x_y', '9', 'lookfor', ' ', '  ', ',', '-', "'", '\n', 'é', 'LOOK', 'fo', 'r');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        const text = pieces.join('');
        const found = new Map<number, string>();
        matchPhrases(index, text, found);
        expect(found).toEqual(naiveMatch(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees with joining tokens and looking them up, with the shipped rules\' words and near misses of them', () => {
    const rules = defaultRuleSet.rules.flatMap((rule, index) => (rule.words === undefined ? [] : [{ index, words: rule.words.flatMap(expandTemplate) }]));
    const index = buildPhraseIndex(rules);
    const naiveMatch = naiveMatcher(rules);
    const words = [...new Set(rules.flatMap(({ words }) => words.flatMap((word) => tokenize(word.toLowerCase()))))];
    const nearMiss = fc.tuple(fc.constantFrom(...words), fc.nat(), fc.constantFrom('', 's', 'x', '-', "'", 'e')).map(([word, at, extra]) => {
      const cut = at % (word.length + 1);
      return `${word.slice(0, cut)}${extra}${word.slice(cut + (extra === '' ? 1 : 0))}`;
    });
    const piece = fc.oneof(fc.constantFrom(...words), nearMiss, fc.constantFrom(' ', ', ', '\n', ' -', "' "));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join(' ');
        const found = new Map<number, string>();
        matchPhrases(index, text, found);
        expect(found).toEqual(naiveMatch(text));
      }),
      { numRuns: 2000 },
    );
  });
});

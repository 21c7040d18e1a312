import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashedFeaturesOf, tokensOf, type RuleEvidence } from '../../src/features.js';
import { featureNames, fnv1a } from '../../src/scorer.js';

/** The wording features' tokens as the regex defines them, with the same head and tail. */
const TOKEN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]+|[\p{L}\p{N}_]+(?:'\p{L}+)?|[?:!$`>#@/.=|~-]/gu;
function regexTokens(prose: string): string[] {
  const all = [...prose.matchAll(TOKEN)].map(([token]) => token);
  return all.length > 160 ? [...all.slice(0, 160), '…', ...all.slice(160).slice(-80)] : all;
}

describe('tokensOf', () => {
  it('reads ASCII text as the regex does, without it', () => {
    const piece = fc.constantFrom("don't", "it's", "a'b", "'x", "x'", "A'B", 'Foo', 'x9_', '?', '!', '.', '/', '-', '~', '|', '=', '#', '@', '>', '`', '$', ':', ' ', '\n', '"', '(', "''", "'", '*', '+', ',');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 400 }), (pieces) => {
        const prose = pieces.join('');
        expect(tokensOf(prose)).toEqual(regexTokens(prose));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads other scripts with the regex', () => {
    for (const prose of ['日本語のテキスト and english', "l'été dernier", 'привет мир', 'naïve café', 'เปิดไฟห้องนอน please']) expect(tokensOf(prose)).toEqual(regexTokens(prose));
  });

  it('reads Thai, written without spaces, by characters and pairs as it reads Japanese', () => {
    const names = featureNames(hashedFeaturesOf('เปิดไฟ', { matched: [], cancelled: [], step: 'default', question: false, external: false, distinctTriggers: 0, handedOver: null }));
    expect(names).toEqual(expect.arrayContaining(['k:เ', 'k:เป', 'k:ไฟ']));
    expect(names).not.toContain('w:เปิดไฟ');
  });
});

describe('hashedFeaturesOf', () => {
  const evidence: RuleEvidence = {
    matched: [{ rule: 'operation.fix', category: 'operation', match: 'fix' }],
    cancelled: [],
    step: 'triggers',
    question: false,
    external: false,
    distinctTriggers: 1,
    handedOver: null,
  };
  const word = fc.stringMatching(/^[a-z]{1,9}$/);

  it('lists each feature once, with its own hash, the same whatever came before', () => {
    // The collector's table is shared between calls and grows with a long message: what one message
    // leaves in it must never show in the next.
    fc.assert(
      fc.property(fc.array(fc.array(word, { maxLength: 600 }), { minLength: 2, maxLength: 4 }), (messages) => {
        const texts = messages.map((words) => words.join(' '));
        const first = texts.map((text) => hashedFeaturesOf(text, evidence));
        const again = [...texts].reverse().map((text) => hashedFeaturesOf(text, evidence)).reverse();
        first.forEach((features, index) => {
          const names = featureNames(features);
          expect(new Set(names).size).toBe(names.length);
          expect(features.hashes).toEqual(names.map((name) => fnv1a(name)));
          expect(names).toEqual(featureNames(again[index]!));
          expect(features.wording.map((at) => names[at])).toEqual(names.filter((name) => /^(f1|f2|w|k):/.test(name)));
          for (const token of tokensOf(texts[index] as string)) if (token !== '…') expect(names).toContain(`w:${token}`);
        });
      }),
      { numRuns: 200 },
    );
  });
});

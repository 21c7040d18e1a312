import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tokensOf } from '../../src/features.js';

/** The wording features' tokens as the regex defines them, with the same head and tail. */
const TOKEN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+|[\p{L}\p{N}_]+(?:'\p{L}+)?|[?:!$`>#@/.=|~-]/gu;
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
    for (const prose of ['日本語のテキスト and english', "l'été dernier", 'привет мир', 'naïve café']) expect(tokensOf(prose)).toEqual(regexTokens(prose));
  });
});

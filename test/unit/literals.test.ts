import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildLiteralIndex, WORD_START_HINT } from '../../src/literals.js';

/** The obvious way, one indexOf walk per literal: the automaton must agree with it everywhere. */
function naiveFirstPositions(text: string, literals: readonly string[]): number[] {
  return literals.map((literal) => {
    const wordStart = literal.startsWith(WORD_START_HINT);
    const body = wordStart ? literal.slice(WORD_START_HINT.length) : literal;
    for (let at = text.indexOf(body); at !== -1; at = text.indexOf(body, at + 1)) {
      if (!wordStart || at === 0 || !/[a-z0-9_-]/.test(text.charAt(at - 1))) return at;
    }
    return -1;
  });
}

describe('buildLiteralIndex', () => {
  it('finds overlapping literals, suffixes of one another, at their first place', () => {
    const literals = ['he', 'she', 'his', 'hers', 'e', '{<}he'];
    const index = buildLiteralIndex(literals);
    expect([...index.firstPositions('ushers she he')]).toEqual([2, 1, -1, 2, 3, 11]);
  });

  it('counts a {<} literal only at a word start', () => {
    const index = buildLiteralIndex(['{<}git ', 'git ']);
    expect([...index.firstPositions('legit git push')]).toEqual([6, 2]);
    expect([...index.firstPositions('a-git _git 9git')]).toEqual([-1, 2]);
    expect([...index.firstPositions('git ')]).toEqual([0, 0]);
  });

  it('never matches across a non-ASCII character, and keeps one entry per duplicate', () => {
    const index = buildLiteralIndex(['ab', 'ab', 'b']);
    expect(index.literals).toEqual(['ab', 'b']);
    expect([...index.firstPositions('a\u00e9b ab')]).toEqual([4, 2]);
  });

  it('rejects an empty or non-ASCII literal', () => {
    expect(() => buildLiteralIndex(['{<}'])).toThrow(/non-empty ASCII/);
    expect(() => buildLiteralIndex(['caf\u00e9'])).toThrow(/non-empty ASCII/);
  });

  it('agrees with indexOf on arbitrary texts and literal sets', () => {
    const alphabet = fc.constantFrom('a', 'b', 'c', '-', '_', ' ', '.', '\n', '\u00e9');
    const literal = fc.tuple(fc.boolean(), fc.string({ unit: fc.constantFrom('a', 'b', 'c', '-', ' ', '.'), minLength: 1, maxLength: 4 }))
      .map(([wordStart, body]) => (wordStart ? WORD_START_HINT + body : body));
    fc.assert(
      fc.property(fc.array(literal, { minLength: 1, maxLength: 12 }), fc.string({ unit: alphabet, maxLength: 60 }), (literals, text) => {
        const index = buildLiteralIndex(literals);
        expect([...index.firstPositions(text)]).toEqual(naiveFirstPositions(text, index.literals));
      }),
      { numRuns: 3000 },
    );
  });
});

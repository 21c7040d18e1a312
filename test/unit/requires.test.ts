import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { defaultRuleSet } from '../../src/index.js';
import { maskProductNames } from '../../src/names.js';
import { cleanText, foldLookalikes, matchingForm } from '../../src/normalize.js';
import { buildLiteralIndex } from '../../src/literals.js';
import { expandBoundaries, type RuleSetData } from '../../src/ruleset.js';

/**
 * A rule's `requires` hints let its pattern skip text that holds none of them. A hint list that misses
 * a literal would hide real matches, so every pattern match found here must come with one of its hints.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const rules = (defaultRuleSet as RuleSetData).rules.filter((rule) => rule.requires !== undefined);
const lookalikes = new Map(Object.entries((defaultRuleSet as RuleSetData).lookalikes));
const names = new Set((defaultRuleSet as RuleSetData).names);
const compiled = rules.map((rule) => ({ rule, pattern: RE2JS.compile(expandBoundaries(rule.pattern as string)), hints: buildLiteralIndex(rule.requires as string[]) }));

const matchable = (text: string) => matchingForm(maskProductNames(foldLookalikes(cleanText(text), lookalikes), names));

function violations(text: string): string[] {
  return compiled
    .filter(({ pattern, hints }) => pattern.test(text) && hints.firstPositions(text).every((at) => at === -1))
    .map(({ rule }) => rule.id);
}

const corpus = ['messages', 'holdout', 'fresh'].flatMap((name) =>
  readFileSync(join(ROOT, 'test/corpus', `${name}.jsonl`), 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { text: string }).text));

describe('requires hints', () => {
  it('every pattern rule has hints', () => {
    expect((defaultRuleSet as RuleSetData).rules.filter((rule) => rule.pattern !== undefined && rule.requires === undefined).map((rule) => rule.id)).toEqual([]);
  });

  it('hold for every match in the corpus, also with quotes, brackets and line breaks around', () => {
    const found: string[] = [];
    let matches = 0;
    for (const text of corpus) {
      for (const variant of [text, `"${text}"`, `(${text})`, `\`${text}\``, `see:\n${text}\nthanks`, text.toUpperCase()]) {
        const form = matchable(variant);
        matches += compiled.filter(({ pattern }) => pattern.test(form)).length;
        for (const id of violations(form)) found.push(`${id}: ${JSON.stringify(variant.slice(0, 80))}`);
      }
    }
    expect(matches).toBeGreaterThan(1000);
    expect(found).toEqual([]);
  });

  it('hold for a record named by its number, in every form the ticket rule reads', () => {
    const texts = ['check build 00', 'close issues 12 and 13', 'who has tickets 301 and 302', 'review prs 88 and 90', 'see pull request 12', 'refund order 55812', 'build #12'];
    expect(texts.map(matchable).flatMap(violations)).toEqual([]);
  });

  it('hold for generated text made of the rules\' own fragments', () => {
    const fragments = [
      ...new Set((defaultRuleSet as RuleSetData).rules.flatMap((rule) => [...(rule.words ?? []), ...(rule.requires ?? []).map((hint) => hint.replace('{<}', ''))])),
    ].filter((fragment) => !fragment.includes('{'));
    const piece = fc.oneof(
      fc.constantFrom(...fragments),
      fc.constantFrom(' ', '\n', '/', '.', ':', '\\', '|', '&', ';', '$', '(', ')', '`', '*', '~', '"', "'", '-', '_', ',', '?', '!'),
      fc.stringMatching(/^[a-z0-9]{1,8}$/),
    );
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 24 }), (pieces) => {
        const form = matchable(pieces.join(''));
        expect(violations(form), JSON.stringify(form)).toEqual([]);
      }),
      { numRuns: 3000 },
    );
  });
});

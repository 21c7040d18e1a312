/**
 * The re2js engine answers `test` with a lazy DFA of its own and extracts a match from the start a
 * backward DFA finds: both must agree with re2js itself, on the shipped patterns and on patterns that
 * use what the shipped ones do not (line and word assertions, case folding, empty matches).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { defaultRuleSet } from '../../src/index.js';
import { re2jsEngine } from '../../src/engines/re2js.js';
import { cleanText, matchingForm } from '../../src/normalize.js';
import { expandBoundaries, type RuleSetData } from '../../src/ruleset.js';

const ROOT = resolve(import.meta.dirname, '../..');
const shipped = (defaultRuleSet as RuleSetData).rules.flatMap((rule) => (rule.pattern === undefined ? [] : [expandBoundaries(rule.pattern)]));
const synthetic = [
  '(?m)^foo$', '\\bfoo\\b', '\\Bo', '(?:^|\\n)x', 'a*', '', '(a|ab)(c|bcd)(d*)', '(?s:.)+b', 'x$', '^$', '(?i)FoO', '[^a]{2,5}b', 'a{0,3}?b',
  '(x)?a[ab]{3}', '(?:^|[^a-z])(git (?:push|pull))(?:[^a-z]|$)', '((a)|b)+', '(a*)+$', '^(?:ab|a)(b?)c',
];

/** re2js alone: the reference. */
function reference(source: string): { test: (text: string) => boolean; firstMatch: (text: string) => string | null } {
  const pattern = RE2JS.compile(source);
  const group = pattern.groupCount() > 0 ? 1 : 0;
  return {
    test: (text) => pattern.test(text),
    firstMatch(text) {
      const matcher = pattern.matcher(text);
      return matcher.find() ? (matcher.group(group) ?? matcher.group(0)) : null;
    },
  };
}

function agree(source: string, texts: Iterable<string>): string[] {
  const mine = re2jsEngine.compile(source);
  const ref = reference(source);
  const wrong: string[] = [];
  for (const text of texts) {
    if (mine.test(text) !== ref.test(text)) wrong.push(`test ${JSON.stringify(source)} on ${JSON.stringify(text)}`);
    else if (mine.firstMatch(text) !== ref.firstMatch(text)) wrong.push(`firstMatch ${JSON.stringify(source)} on ${JSON.stringify(text)}`);
  }
  return wrong;
}

const corpus = ['messages', 'holdout', 'fresh'].flatMap((name) =>
  readFileSync(join(ROOT, 'test/corpus', `${name}.jsonl`), 'utf8').trim().split('\n').map((line) => matchingForm(cleanText((JSON.parse(line) as { text: string }).text))));

const fragments = ['git ', 'push', ' to ', 'main', 'src/', '/etc/', 'foo', 'FOO', 'a', 'b', 'ab', 'bcd', 'x', '\n', ' ', '$ ', '|', '&&', '.ts', 'http://', 'www.', "don't ", 'do it', 'rm -rf', '```', '*', '~/', './', 'c:\\', 'localhost:80', 'ls', 'O', '\t', 'what is', 'where is the x defined'];
const fragmentText = fc.array(fc.constantFrom(...fragments), { maxLength: 14 }).map((pieces) => pieces.join(''));

describe('re2js engine with its lazy DFA', () => {
  it('agrees with re2js on every shipped pattern over the corpus', () => {
    expect(shipped.flatMap((source) => agree(source, corpus))).toEqual([]);
  });

  it('agrees with re2js on shipped and synthetic patterns over generated text', () => {
    fc.assert(
      fc.property(fc.constantFrom(...shipped, ...synthetic), fc.array(fragmentText, { minLength: 1, maxLength: 20 }), (source, texts) => {
        expect(agree(source, texts)).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });

  it('agrees with re2js when a pattern needs more states than the DFA caches', () => {
    const texts = fc.sample(fc.stringMatching(/^[abx]{0,200}$/), { numRuns: 300, seed: 7 });
    expect(['(a|b)*a(a|b){12}x', 'a(a|b){13}$', '(?:^|b)a(a|b){12}(b|$)'].flatMap((source) => agree(source, texts))).toEqual([]);
  });

  it('hands text that is not ASCII to re2js', () => {
    expect(agree('(caf.)', ['café', 'un café noir', 'cafe', '日本 cafe'])).toEqual([]);
  });
});

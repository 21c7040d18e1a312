import { describe, expect, it } from 'vitest';
import {
  compileRuleSet,
  createClassifier,
  defaultRuleSet,
  RuleSetError,
  RuleSetSchema,
} from '../../src/index.js';
import { re2jsEngine } from '../../src/engines/re2js.js';
import { cleanText } from '../../src/normalize.js';

/** Rule set data loosened for breaking on purpose. */
type Rules = Record<string, unknown> & {
  version: unknown;
  rules: Record<string, unknown>[];
  trivial: Record<string, string>;
  lookalikes: Record<string, string>;
};

/** A deep copy of the shipped rules to break. */
const clone = (): Rules => structuredClone(defaultRuleSet) as unknown as Rules;
/** A pattern rule of the shipped set (index into rules), to break its pattern. */
const patternRuleIndexes = (rules: Rules) =>
  rules.rules.flatMap((rule, index) => (typeof rule.pattern === 'string' ? [index] : []));

/** Runs createClassifier and returns the RuleSetError it must throw. */
function ruleSetError(rules: unknown, engine: 're2js' | 're2-wasm' = 're2js'): RuleSetError {
  try {
    createClassifier({ rules, engine });
  } catch (error) {
    expect(error).toBeInstanceOf(RuleSetError);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('RuleSetError');
    return error as RuleSetError;
  }
  throw new Error('expected createClassifier to throw a RuleSetError');
}

/** A small, valid rule set: fits any engine. */
function tinyRuleSet(rules: Record<string, unknown>[]): Rules {
  const data = clone();
  data.rules = rules;
  return data;
}

describe('the shipped rule set', () => {
  it('is valid data and compiles on re2js', () => {
    expect(RuleSetSchema.safeParse(defaultRuleSet).success).toBe(true);
    const compiled = compileRuleSet(defaultRuleSet, re2jsEngine);
    expect(compiled.rules.length).toBe(defaultRuleSet.rules.length);
    expect(compiled.rules.map((rule) => rule.id)).toEqual(defaultRuleSet.rules.map((rule) => rule.id));
    expect(compiled.engine.name).toBe('re2js');
  });

  it('compiles every phrase list of the context cues to the form turns are read in', () => {
    const cues = compileRuleSet(defaultRuleSet, re2jsEngine).context ?? {};
    const lists = Object.entries(cues).filter((entry): entry is [string, string[]] => Array.isArray(entry[1]));
    expect(lists.map(([name]) => name)).toContain('assent');
    for (const [, phrases] of lists) expect(phrases).toEqual(phrases.map(cleanText));
    // Marks go, as they go from a turn: "faça" is read as the turn "faca" is.
    expect(cues).toMatchObject({ assent: expect.arrayContaining(['faca', 'lutfen']) });
  });

  it('structuredClone of it builds an equivalent classifier, and edits to the copy leave the original alone', () => {
    const copy = clone();
    const copyClassifier = createClassifier({ rules: copy });
    expect(copyClassifier.classify('fix the E2E tests in zbooks repo')).toEqual(createClassifier().classify('fix the E2E tests in zbooks repo'));
    copy.rules[0]!.pattern = '(?=x)';
    expect(defaultRuleSet.rules[0]).not.toEqual(copy.rules[0]);
    expect(() => createClassifier()).not.toThrow();
  });
});

describe('invalid RE2 patterns are rejected at load, naming the rule', () => {
  it.each([
    ['a lookahead', '(?=x)'],
    ['a negative lookahead', 'foo(?!bar)'],
    ['a lookbehind', '(?<=x)y'],
    ['a backreference', '(a)\\1'],
    ['an unbalanced group', '(abc'],
    ['a bad repetition', 'a{2,1}'],
    ['a possessive quantifier', 'a++'],
  ])('%s (%s)', (_what, pattern) => {
    const rules = clone();
    const index = patternRuleIndexes(rules)[0]!;
    const id = rules.rules[index]!.id as string;
    rules.rules[index]!.pattern = pattern;
    const error = ruleSetError(rules);
    expect(error.message).toContain(`"${id}"`);
    expect(error.message).toMatch(/does not compile on re2js/);
    expect(error.issues).toHaveLength(1);
    expect(error.issues[0]).toContain(id);
  });

  it('a bad pattern in the middle of the set names that rule', () => {
    const rules = clone();
    const indexes = patternRuleIndexes(rules);
    const index = indexes[Math.floor(indexes.length / 2)]!;
    const id = rules.rules[index]!.id as string;
    rules.rules[index]!.pattern = '(?=x)';
    expect(ruleSetError(rules).message).toContain(`rule "${id}"`);
  });

  it('a bad trivial-command pattern names the command', () => {
    const rules = clone();
    (rules.trivial as Record<string, string>).pwd = '(?=x)';
    const error = ruleSetError(rules);
    expect(error.message).toContain('trivial.pwd');
  });

  it('also on re2-wasm (a small rule set), naming the rule and the engine', () => {
    const rules = tinyRuleSet([
      { id: 'good.one', category: 'operation', words: ['frobnicate'] },
      { id: 'bad.lookahead', category: 'operation', pattern: 'x(?=y)' },
    ]);
    const error = ruleSetError(rules, 're2-wasm');
    expect(error.message).toContain('"bad.lookahead"');
    expect(error.message).toContain('re2-wasm');
    expect(error.message).not.toContain('good.one');
  });
});

describe('ASCII-only classes are rejected with the reason', () => {
  it.each(['\\bfix\\b', 'fix\\B', 'foo\\w+', 'a\\Wb', '(?:^|\\s)\\w'])('%j', (pattern) => {
    const rules = clone();
    const index = patternRuleIndexes(rules)[0]!;
    const id = rules.rules[index]!.id as string;
    rules.rules[index]!.pattern = pattern;
    const error = ruleSetError(rules);
    expect(error.message).toContain(`"${id}"`);
    expect(error.message).toMatch(/ASCII/);
    expect(error.message).toContain('{<}');
    expect(error.message).toContain('{>}');
  });

  it('an escaped backslash followed by b is a literal, not \\b, and is accepted', () => {
    const rules = tinyRuleSet([{ id: 'windows.backslash_b', category: 'file', pattern: '(c:\\\\bin)' }]);
    const classifier = createClassifier({ rules, scorer: null });
    expect(classifier.classify('look in c:\\bin').mode).toBe('ACTION');
  });

  it('an escaped backslash followed by \\b is still caught', () => {
    const rules = tinyRuleSet([{ id: 'sneaky.boundary', category: 'file', pattern: 'x\\\\\\bfoo' }]);
    expect(ruleSetError(rules).message).toContain('"sneaky.boundary"');
  });

  it('the Unicode-aware boundaries {<} and {>} work where \\b would not', () => {
    const rules = tinyRuleSet([{ id: 'custom.frob', category: 'operation', pattern: '{<}(frobnicate){>}' }]);
    const classifier = createClassifier({ rules, scorer: null });
    expect(classifier.classify('frobnicate it').triggers).toEqual([{ rule: 'custom.frob', category: 'operation', match: 'frobnicate' }]);
    expect(classifier.classify('(frobnicate)').mode).toBe('ACTION');
    for (const text of ['frobnicated', 'xfrobnicate', 'frobnicateъ', 'пfrobnicate', 'frobnicate_x', 'pre-frobnicate']) {
      expect(classifier.classify(text).mode, text).toBe('ANSWER');
    }
  });
});

describe('schema problems', () => {
  it('duplicate rule ids', () => {
    const rules = clone();
    rules.rules.push({ ...rules.rules[0]! });
    const error = ruleSetError(rules);
    expect(error.message).toContain(`duplicate rule id "${rules.rules[0]!.id as string}"`);
  });

  it('a rule with both words and pattern', () => {
    const rules = clone();
    const index = patternRuleIndexes(rules)[0]!;
    rules.rules[index]!.words = ['x'];
    const error = ruleSetError(rules);
    expect(error.message).toContain(`rules.${index}`);
    expect(error.message).toMatch(/either "words" or "pattern"/);
  });

  it('a rule with neither words nor pattern', () => {
    const rules = clone();
    const index = patternRuleIndexes(rules)[0]!;
    delete rules.rules[index]!.pattern;
    expect(ruleSetError(rules).message).toMatch(/either "words" or "pattern"/);
  });

  it('an unknown category', () => {
    const rules = clone();
    rules.rules[3]!.category = 'nope';
    const error = ruleSetError(rules);
    expect(error.message).toMatch(/rules\.3\.category/);
    expect(error.issues).toHaveLength(1);
  });

  it('"handsOverAfter" on a rule that is not a content rule', () => {
    const rules = clone();
    const index = rules.rules.findIndex((rule) => rule.category === 'operation');
    rules.rules[index]!.handsOverAfter = true;
    const error = ruleSetError(rules);
    expect(error.message).toContain('"handsOverAfter" belongs to content rules only');
    expect(error.issues).toHaveLength(1);
  });

  it.each([2, 0, '1', null])('a wrong version (%j)', (version) => {
    const rules = clone();
    rules.version = version as never;
    expect(ruleSetError(rules).message).toMatch(/version/);
  });

  it('a missing version', () => {
    const rules = clone();
    delete (rules as Record<string, unknown>).version;
    expect(ruleSetError(rules).message).toMatch(/version/);
  });

  it('an unknown key, on a rule or at the top', () => {
    const onRule = clone();
    onRule.rules[0]!.severity = 'high';
    expect(ruleSetError(onRule).message).toMatch(/severity/);
    const atTop = clone();
    atTop.extra = true;
    expect(ruleSetError(atTop).message).toMatch(/extra/);
  });

  it('a rule id that is not lower-case dotted words', () => {
    const rules = clone();
    rules.rules[0]!.id = 'Bad Id';
    expect(ruleSetError(rules).message).toMatch(/rules\.0\.id/);
  });

  it('an empty rule list, an empty words list, an empty word', () => {
    const none = clone();
    none.rules = [];
    expect(ruleSetError(none).message).toMatch(/rules/);
    const emptyWords = tinyRuleSet([{ id: 'a.b', category: 'operation', words: [] }]);
    expect(ruleSetError(emptyWords).message).toMatch(/rules\.0\.words/);
    const blankWord = tinyRuleSet([{ id: 'a.b', category: 'operation', words: ['  '] }]);
    expect(ruleSetError(blankWord).message).toMatch(/rules\.0\.words\.0/);
  });

  it('a look-alike that is not one or two Latin letters', () => {
    const rules = clone();
    (rules.lookalikes as Record<string, string>).ж = 'zh1';
    expect(ruleSetError(rules).message).toMatch(/lookalikes/);
  });

  it('data that is not an object at all', () => {
    expect(ruleSetError('rules').message).toMatch(/\(root\)/);
    expect(ruleSetError(42).message).toMatch(/\(root\)/);
    expect(ruleSetError([]).message).toMatch(/\(root\)/);
  });
});

describe('every issue is reported at once', () => {
  it('two bad patterns → both rules named', () => {
    const rules = clone();
    const [first, second] = patternRuleIndexes(rules);
    const ids = [rules.rules[first!]!.id as string, rules.rules[second!]!.id as string];
    rules.rules[first!]!.pattern = '(?=x)';
    rules.rules[second!]!.pattern = '\\bword\\b';
    const error = ruleSetError(rules);
    expect(error.issues).toHaveLength(2);
    expect(error.message).toContain(`"${ids[0]}"`);
    expect(error.message).toContain(`"${ids[1]}"`);
  });

  // The duplicate-id check runs even when another rule is malformed.
  it('two schema problems (an unknown category, a duplicate id) → both reported', () => {
    const rules = clone();
    rules.rules[1]!.category = 'nope';
    rules.rules.push({ ...rules.rules[5]! });
    const error = ruleSetError(rules);
    expect(error.issues).toHaveLength(2);
    expect(error.message).toMatch(/rules\.1\.category/);
    expect(error.message).toMatch(/duplicate rule id/);
  });

  it('a bad trivial pattern and a bad rule pattern → both reported', () => {
    const rules = clone();
    const index = patternRuleIndexes(rules)[0]!;
    rules.rules[index]!.pattern = '(?=x)';
    (rules.trivial as Record<string, string>).date = '(?!y)';
    const error = ruleSetError(rules);
    expect(error.issues).toHaveLength(2);
    expect(error.message).toContain(`"${rules.rules[index]!.id as string}"`);
    expect(error.message).toContain('trivial.date');
  });

  // A malformed rule does not hide an uncompilable pattern elsewhere: every problem is reported at once.
  it('a schema problem in one rule and an uncompilable pattern in another → both named', () => {
    const rules = clone();
    const index = patternRuleIndexes(rules).find((i) => i !== 1)!;
    const badPatternId = rules.rules[index]!.id as string;
    rules.rules[1]!.category = 'nope';
    rules.rules[index]!.pattern = '(?=x)';
    const error = ruleSetError(rules);
    expect(error.message).toMatch(/rules\.1\.category/);
    expect(error.message).toContain(`"${badPatternId}"`);
  });
});

describe('words rules', () => {
  it('match whole words only, with hyphens joining words', () => {
    const rules = tinyRuleSet([{ id: 'op.stop', category: 'execution', words: ['stop', 'compile'] }]);
    const classifier = createClassifier({ rules, scorer: null });
    expect(classifier.classify('stop the server').mode).toBe('ACTION');
    expect(classifier.classify('please compile.').mode).toBe('ACTION');
    for (const text of ['one-stop shop', 'compile-time check', 'nonstop', 'stopwatch', 'stop_words', 'stopа']) {
      expect(classifier.classify(text).mode, text).toBe('ANSWER');
    }
  });

  it('a word with regex characters is rejected at load, never read as a regex', () => {
    const rules = tinyRuleSet([{ id: 'lang.literal', category: 'operation', words: ['a.b', 'x+', 'c*'] }]);
    expect(() => createClassifier({ rules })).toThrow(/rule "lang\.literal": "a\.b", "x\+", "c\*" cannot be matched as words/);
  });

  // A words entry is cut into letter/digit tokens, so punctuation in it could never be matched: "c++"
  // would read as "c" and fire on any lone "c". Such an entry is rejected at load, naming it.
  it('a words entry with punctuation ("c++") is rejected instead of matching the bare letters', () => {
    const rules = tinyRuleSet([{ id: 'lang.cpp', category: 'operation', words: ['c++'] }]);
    expect(() => createClassifier({ rules })).toThrow(/rule "lang\.cpp": "c\+\+" cannot be matched as words.*needs a pattern/);
  });

  it('a phrase matches across any run of white space, and only as a whole phrase', () => {
    const rules = tinyRuleSet([{ id: 'search.look_for', category: 'search', words: ['look for'] }]);
    const classifier = createClassifier({ rules, scorer: null });
    expect(classifier.classify('look   for\u00a0it').triggers[0]!.match).toBe('look for');
    expect(classifier.classify('look\tfor it').triggers[0]!.match).toBe('look for');
    expect(classifier.classify('look\nfor it').triggers[0]!.match).toMatch(/^look\s+for$/);
    for (const text of ['look here', 'for a look', 'lookfor', 'look-for']) expect(classifier.classify(text).mode, text).toBe('ANSWER');
  });

  it('upper-case words in config still match (words are lower-cased like the text)', () => {
    const rules = tinyRuleSet([{ id: 'op.deploy', category: 'deployment', words: ['DEPLOY'] }]);
    expect(createClassifier({ rules, scorer: null }).classify('Deploy it').mode).toBe('ACTION');
  });
});

// Match text is looked for in small windows cut at white space before the whole text is searched;
// a window must never report text that is not a match in the whole message.
describe('match extraction', () => {
  const filler = 'a few plain words to pad the message out so windows are needed here. ';

  it('finds the match when the first hint literal is not part of it', () => {
    const rules = tinyRuleSet([{ id: 'file.ts', category: 'file', pattern: '(?:^|[\\s(])([a-z/]+\\.ts)(?:[^a-z0-9_-]|$)', requires: ['.'] }]);
    const text = `yes. ${filler}${filler}then fix services/billing/jobs/export.ts so it stops. ${filler}`;
    expect(createClassifier({ rules, scorer: null }).classify(text).triggers[0]?.match).toBe('services/billing/jobs/export.ts');
  });

  it('a match longer than a window is still found whole', () => {
    const rules = tinyRuleSet([{ id: 'file.ts', category: 'file', pattern: '(?:^|\\s)((?:[a-z]+/)+[a-z]+\\.ts)', requires: ['.ts'] }]);
    const path = `${'directory/'.repeat(12)}main.ts`;
    const text = `${filler}see ${path} please`;
    expect(createClassifier({ rules, scorer: null }).classify(text).triggers[0]?.match).toBe(path);
  });

  it('a line-start anchor is honoured: a window cut at a space is not read as a line start', () => {
    const rules = tinyRuleSet([{ id: 'shell.line', category: 'execution', pattern: '(?:^|\\n)(go [a-z]+)', requires: ['go '] }]);
    const text = `${filler}we go home now. ${filler}\ngo west`;
    expect(createClassifier({ rules, scorer: null }).classify(text).triggers[0]?.match).toBe('go west');
  });
});

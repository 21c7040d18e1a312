/**
 * Compiles a rule set (see rules-schema.ts for the file's shape) on a regex engine: every pattern once,
 * the word lists into a phrase index, the hint literals into one automaton. Reports every problem of a
 * bad rule set at once.
 */
import type { Category } from './categories.js';
import { escapeRegex } from './escape-regex.js';
import { cleanText, type Lookalikes } from './normalize.js';
import type { ContextCues } from './context.js';
import type { CompiledPattern, RegexEngine } from './engines/engine.js';
import { buildLiteralIndex } from './literals.js';
import { edgesReadAsSpace } from './match-text.js';
import { buildPhraseIndex, expandTemplate } from './phrases.js';
import { createRuleScan, type RuleScan } from './rule-scan.js';
import { RuleSchema, RuleSetSchema, type RuleSetData } from './rules-schema.js';

export { RuleSetSchema, type RuleData, type RuleSetData } from './rules-schema.js';

export interface CompiledRule {
  readonly id: string;
  readonly category: Category;
  /** A content rule whose handed-over text begins right after its match. */
  readonly handsOverAfter: boolean;
}

export interface CompiledRuleSet {
  readonly rules: readonly CompiledRule[];
  /**
   * Index into `rules` → the first text that rule matched, for every rule that matches `text`; rules
   * already in `known` (found in another reading of the same message) are skipped.
   */
  readonly scan: RuleScan;
  readonly question: CompiledPattern;
  readonly notQuestion: CompiledPattern | null;
  readonly trivial: readonly { readonly command: string; readonly pattern: CompiledPattern }[];
  readonly names: ReadonlySet<string>;
  readonly lookalikes: Lookalikes;
  /** Follow-up cues; null when the rule set has none (context is then off). */
  readonly context: ContextCues | null;
  readonly engine: RegexEngine;
}

/** Thrown when a rule set cannot be used; `issues` names every problem with its path. */
export class RuleSetError extends Error {
  constructor(readonly issues: readonly string[]) {
    super(`invalid rule set:\n${issues.map((issue) => `  - ${issue}`).join('\n')}`);
    this.name = 'RuleSetError';
  }
}

// Rules see matchingForm text, where `_` stands for any non-ASCII letter or digit. Hyphens join words:
// "compile-time" holds no "compile", "one-stop" no "stop".
const WORD_START = '(?:^|[^a-z0-9_-])';
const WORD_END = '(?:[^a-z0-9_-]|$)';
const ASCII_ONLY_CLASSES = /\\[bBwW]/;
/** What a word entry may hold: tokens as phrases.ts cuts them, separated by spaces (a comma reads as a space). */
const WORD_ENTRY = /^[a-z0-9_'-]*[a-z0-9][a-z0-9_'-]*(?:[ ,]+[a-z0-9_'-]*[a-z0-9][a-z0-9_'-]*)*$/;
const NON_ASCII_SOURCE = /[^\x00-\x7f]|\\p/;

/** A literal phrase as a pattern fragment: its spaces match any run of white space. */
function phrase(text: string): string {
  return text.toLowerCase().split(/\s+/).map(escapeRegex).join('\\s+');
}

/** A rule pattern as the engine compiles it: `{<}` and `{>}` spelled out. */
export function expandBoundaries(pattern: string): string {
  return pattern.replaceAll('{<}', WORD_START).replaceAll('{>}', WORD_END);
}

/**
 * A question's opening: after a markdown heading, quote or bullet mark, any run of `prefixes`, each maybe
 * with a name after it ("hi claude, how do i …"), then one of `starts`.
 */
function questionSource(question: RuleSetData['question'], starts: readonly string[]): string {
  const prefixes = question.prefixes.map(phrase).join('|');
  const lead = prefixes ? `(?:(?:${prefixes})(?:\\s+[a-z0-9_-]+,)?[\\s,.:;!-]*\\s)*` : '';
  return `^(?:(?:#{1,6}|>|[-*])\\s+)?${lead}(${starts.map(phrase).join('|')})${WORD_END}`;
}

/**
 * Validates rule set data and compiles every pattern once on the given engine. Reports all problems
 * at once, each naming the rule (or field) and the reason, so a bad reload can say exactly what to fix.
 */
export function compileRuleSet(data: unknown, engine: RegexEngine): CompiledRuleSet {
  const issues: string[] = [];
  const compile = (where: string, source: string): CompiledPattern | null => {
    if (ASCII_ONLY_CLASSES.test(source.replace(/\\\\/g, ''))) {
      issues.push(`${where}: \\b, \\B, \\w and \\W only know ASCII letters; use {<} and {>} for word boundaries`);
      return null;
    }
    if (NON_ASCII_SOURCE.test(source)) {
      issues.push(`${where}: rules see ASCII text (non-ASCII letters as "_", see matchingForm); write the pattern in ASCII without \\p classes`);
      return null;
    }
    try {
      return engine.compile(source);
    } catch (error) {
      issues.push(`${where}: pattern does not compile on ${engine.name}: ${(error as Error).message}`);
      return null;
    }
  };

  const parsed = RuleSetSchema.safeParse(data);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) issues.push(`${issue.path.join('.') || '(root)'}: ${issue.message}`);
    // The patterns of the rules that are well formed are tried too, so one load reports every problem.
    const rules: unknown = (data as { rules?: unknown } | null)?.rules;
    const ids = new Set<string>();
    (Array.isArray(rules) ? rules : []).forEach((rule: unknown, index) => {
      const id = (rule as { id?: unknown } | null)?.id;
      if (typeof id === 'string' && ids.has(id)) issues.push(`rules.${index}.id: duplicate rule id "${id}"`);
      if (typeof id === 'string') ids.add(id);
      const one = RuleSchema.safeParse(rule);
      if (one.success && one.data.pattern !== undefined) compile(`rule "${one.data.id}"`, expandBoundaries(one.data.pattern));
    });
    throw new RuleSetError([...new Set(issues)]);
  }
  const ruleSet = parsed.data;

  const rules: CompiledRule[] = ruleSet.rules.map(({ id, category, handsOverAfter }) => ({ id, category, handsOverAfter: handsOverAfter === true }));
  const wordRules: { index: number; words: string[] }[] = [];
  const patternRules: { index: number; pattern: CompiledPattern; source: string; requires: readonly string[] | undefined }[] = [];
  ruleSet.rules.forEach((rule, index) => {
    if (rule.words !== undefined) {
      let words: string[];
      try {
        words = rule.words.flatMap(expandTemplate);
      } catch (error) {
        issues.push(`rule "${rule.id}": ${(error as Error).message}`);
        return;
      }
      const unmatchable = words.filter((word) => !WORD_ENTRY.test(word.toLowerCase()));
      if (unmatchable.length > 0) issues.push(`rule "${rule.id}": ${unmatchable.slice(0, 3).map((word) => JSON.stringify(word)).join(', ')} cannot be matched as words: use ASCII letters, digits, _ ' - and spaces (anything else, such as "c++", needs a pattern)`);
      wordRules.push({ index, words });
      return;
    }
    const source = expandBoundaries(rule.pattern ?? '');
    const pattern = compile(`rule "${rule.id}"`, source);
    if (pattern) patternRules.push({ index, pattern, source, requires: rule.requires });
  });
  const phrases = buildPhraseIndex(wordRules);
  const hints = buildLiteralIndex(patternRules.flatMap(({ requires }) => requires ?? []));
  const hintIdOf = new Map(hints.literals.map((literal, id) => [literal, id]));
  const scan = createRuleScan(phrases, hints, patternRules.map(({ index, pattern, source, requires }) => ({
    index,
    pattern,
    windowed: edgesReadAsSpace(source),
    hintIds: requires === undefined ? null : requires.map((literal) => hintIdOf.get(literal) as number),
  })));
  const question = compile('question.starts', questionSource(ruleSet.question, ruleSet.question.starts));
  const notQuestion = ruleSet.question.notStarts.length > 0
    ? compile('question.notStarts', questionSource(ruleSet.question, ruleSet.question.notStarts))
    : null;
  const trivial = Object.entries(ruleSet.trivial).flatMap(([command, args]) => {
    const pattern = compile(`trivial.${command}`, `^(?:\\$ )?(${escapeRegex(command)})${args}$`);
    return pattern ? [{ command, pattern }] : [];
  });
  if (issues.length > 0 || !question) throw new RuleSetError(issues);

  return {
    rules,
    scan,
    question,
    notQuestion,
    trivial,
    names: new Set(ruleSet.names.map((name) => name.toLowerCase())),
    lookalikes: new Map(Object.entries(ruleSet.lookalikes)),
    context: ruleSet.context === undefined ? null : cleanedCues(ruleSet.context),
    engine,
  };
}

/**
 * Every phrase list of the context cues in the form turns are read in (cleanText: lower case, marks
 * dropped). Every list is cleaned, so a list added to the schema cannot be missed here.
 */
function cleanedCues(cues: ContextCues): ContextCues {
  return Object.fromEntries(Object.entries(cues).map(([key, value]) => [key, Array.isArray(value) ? value.map(cleanText) : value])) as ContextCues;
}

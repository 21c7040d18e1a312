import { z } from 'zod';
import { CATEGORIES, type Category } from './categories.js';
import { ContextCuesSchema, type ContextCues } from './context.js';
import type { CompiledPattern, RegexEngine } from './engines/engine.js';
import { buildLiteralIndex } from './literals.js';
import { cleanText, type Lookalikes } from './normalize.js';
import { buildPhraseIndex, expandTemplate, matchPhrases } from './phrases.js';

/**
 * The rule set file (config/rules.json): the words and patterns of the routing contract. `words` are
 * whole words or phrases, matched by dictionary over the message's tokens. `pattern`s are RE2 syntax and
 * see normalised text (lower case, see normalizeText). `\b` and `\w` are ASCII-only in RE2, so patterns
 * use the Unicode-aware boundaries `{<}` (start of text or a non-word character before) and `{>}`
 * (a non-word character or end of text after) instead.
 */
const ruleId = z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/, 'a rule id is lower-case words joined by dots, e.g. "operation.fix"');

const RuleSchema = z
  .object({
    id: ruleId,
    category: z.enum(CATEGORIES),
    description: z.string().optional(),
    /** Whole words and phrases; `{a|b}` inside one stands for each choice in turn. */
    words: z.array(z.string().trim().min(1)).min(1).optional(),
    pattern: z.string().min(1).optional(),
    /**
     * Literals at least one of which every match of `pattern` contains: the pattern runs only on text
     * holding one of them. `{<}ls ` means "ls " at the start of a word. A literal missing from this list
     * hides matches, so tests check the list against every pattern match in the corpus.
     */
    requires: z.array(z.string().min(1).regex(/^(?:\{<\})?[\x00-\x7f]+$/, 'ASCII, as the text rules see').refine((literal) => literal === literal.toLowerCase(), 'lower case, as the text rules see').refine((literal) => literal !== '{<}', 'a literal after {<}')).min(1).optional(),
  })
  .strict()
  .refine((rule) => (rule.words === undefined) !== (rule.pattern === undefined), {
    message: 'a rule has either "words" or "pattern", not both and not neither',
  })
  .refine((rule) => rule.requires === undefined || rule.pattern !== undefined, {
    message: '"requires" belongs to pattern rules only',
  });

const RuleSetShape = z
  .object({
    version: z.literal(1),
    question: z
      .object({
        prefixes: z.array(z.string().min(1)),
        starts: z.array(z.string().min(1)).min(1),
        notStarts: z.array(z.string().min(1)),
      })
      .strict(),
    trivial: z.record(z.string().regex(/^[a-z][a-z0-9_-]*$/, 'a command name'), z.string()),
    names: z.array(z.string().min(1)),
    /** Look-alike letter → the Latin letter it imitates; a second letter is an alternate reading (Cyrillic у reads as y or u). */
    /** Cues that tell a follow-up from a turn that stands alone (see context.ts). Without them, context is off. */
    context: ContextCuesSchema.optional(),
    lookalikes: z.record(z.string().length(1), z.string().regex(/^[a-z]{1,2}$/, 'one Latin letter, or two: the usual reading and an alternate')),
    rules: z.array(RuleSchema).min(1),
  })
  .strict();

/** The rule set file's schema: every rule valid, every id unique. */
export const RuleSetSchema = RuleSetShape.superRefine((ruleSet, ctx) => {
  const seen = new Set<string>();
  ruleSet.rules.forEach((rule, index) => {
    if (seen.has(rule.id)) ctx.addIssue({ code: 'custom', path: ['rules', index, 'id'], message: `duplicate rule id "${rule.id}"` });
    seen.add(rule.id);
  });
});

export type RuleSetData = z.infer<typeof RuleSetShape>;
export type RuleData = RuleSetData['rules'][number];

export interface CompiledRule {
  readonly id: string;
  readonly category: Category;
}

export interface CompiledRuleSet {
  readonly rules: readonly CompiledRule[];
  /** Index into `rules` → the first text that rule matched, for every rule that matches `text`. */
  readonly scan: (text: string) => Map<number, string>;
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

function escapeRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

/** A literal phrase as a pattern fragment: its spaces match any run of white space. */
function phrase(text: string): string {
  return text.toLowerCase().split(/\s+/).map(escapeRegex).join('\\s+');
}

/** A rule pattern as the engine compiles it: `{<}` and `{>}` spelled out. */
export function expandBoundaries(pattern: string): string {
  return pattern.replaceAll('{<}', WORD_START).replaceAll('{>}', WORD_END);
}

function questionSource(question: RuleSetData['question'], starts: readonly string[]): string {
  const prefixes = question.prefixes.map(phrase).join('|');
  const lead = prefixes ? `(?:(?:${prefixes})[\\s,.:;!-]*\\s)*` : '';
  return `^${lead}(${starts.map(phrase).join('|')})${WORD_END}`;
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

  const rules: CompiledRule[] = ruleSet.rules.map(({ id, category }) => ({ id, category }));
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
  const patternRuleHints = patternRules.map(({ index, pattern, source, requires }) => ({
    index,
    pattern,
    windowed: edgesReadAsSpace(source),
    hintIds: requires === undefined ? null : requires.map((literal) => hintIdOf.get(literal) as number),
  }));
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
    scan(text) {
      const found = new Map<number, string>();
      matchPhrases(phrases, text, found);
      const positions = hints.firstPositions(text);
      for (const { index, pattern, windowed, hintIds } of patternRuleHints) {
        const at = hintIds === null ? 0 : firstOf(positions, hintIds);
        if (at === -1 || !pattern.test(text)) continue;
        const match = (windowed && text.length <= CHUNK + OVERLAP ? matchInWindows(pattern, text, at) : null) ?? matchText(pattern, text, at);
        if (match !== null) found.set(index, match);
      }
      return found;
    },
    question,
    notQuestion,
    trivial,
    names: new Set(ruleSet.names.map((name) => name.toLowerCase())),
    lookalikes: new Map(Object.entries(ruleSet.lookalikes)),
    context: ruleSet.context === undefined ? null : { ...ruleSet.context, follow: ruleSet.context.follow.map(cleanText), decline: ruleSet.context.decline.map(cleanText), declineAlone: ruleSet.context.declineAlone.map(cleanText), offers: ruleSet.context.offers.map(cleanText) },
    engine,
  };
}

/** The earliest of the given literals' positions, or -1 when none occurs. */
function firstOf(positions: Int32Array, ids: readonly number[]): number {
  let first = -1;
  for (const id of ids) {
    const at = positions[id] as number;
    if (at !== -1 && (first === -1 || at < first)) first = at;
  }
  return first;
}

/**
 * `^` and `$` written as one side of a choice with a class that holds white space: `(?:^|[\s…]`,
 * `(?:^|[^a-z…]`, `(?:[^a-z…]|$)`, `(?:$|[^a-z…]`. A pattern whose every `^` and `$` reads so matches
 * inside a window cut at white space exactly as it does there in the whole text.
 */
const EDGE_AS_SPACE = /\(\?:[$^]\|\[(?:\\s|\^[^\]\\\s]*\])|\[\^[^\]\\\s]*\]\|\$\)/g;

function edgesReadAsSpace(source: string): boolean {
  const rest = source.replace(EDGE_AS_SPACE, '').replace(/\\./g, '').replace(/\[[^\]]*\]/g, '');
  return !/[$^]/.test(rest);
}

/** Extraction windows in short texts: about this long, each starting half way into the one before. */
const WINDOW = 64;

/**
 * Extracting a match costs ten to twenty tests and grows with the text, so in a short text the match
 * is looked for in windows cut at white space, from the first hint literal on: a test finds the first
 * window holding one. Null when none does, e.g. a match longer than a window.
 */
function matchInWindows(pattern: CompiledPattern, text: string, hint: number): string | null {
  let start = hint;
  while (start > 0 && !isSpace(text.charCodeAt(start - 1))) start -= 1;
  for (;;) {
    const end = spaceAtOrAfter(text, start + WINDOW);
    if (start === 0 && end === text.length) return null;
    const window = text.slice(start, end);
    if (pattern.test(window)) return pattern.firstMatch(window);
    if (end === text.length) return null;
    start = spaceAtOrAfter(text, start + WINDOW / 2) + 1;
  }
}

function spaceAtOrAfter(text: string, at: number): number {
  let i = Math.min(at, text.length);
  while (i < text.length && !isSpace(text.charCodeAt(i))) i += 1;
  return i;
}

/** The only white space left in the matching form. */
function isSpace(code: number): boolean {
  return code === 32 || code === 10;
}

/** Extracting a capture is far slower than testing (an NFA, not a DFA), so it runs on a small chunk. */
const CHUNK = 1024;
const OVERLAP = 256;

/** The nearest white space at or before `at`, so a chunk never starts inside a word. */
function wordStart(text: string, at: number): number {
  for (let i = at; i > 0 && i > at - OVERLAP; i -= 1) if (/\s/.test(text.charAt(i - 1))) return i;
  return Math.max(0, at);
}

/**
 * Text of a match of a pattern already known to match `text`, for the trigger's explanation: the first
 * chunk (from near the first hint literal, cut at white space) that tests true is searched for it.
 * Whether the rule matched is decided by the test on the whole text, never by a chunk.
 */
function matchText(pattern: CompiledPattern, text: string, hint: number): string | null {
  if (text.length > CHUNK + OVERLAP) {
    for (let start = wordStart(text, Math.max(0, hint - OVERLAP)); start < text.length; start = wordStart(text, start + CHUNK)) {
      const chunk = text.slice(start, start + CHUNK + OVERLAP);
      if (pattern.test(chunk)) {
        const match = pattern.firstMatch(chunk);
        if (match !== null) return match;
      }
      if (start + CHUNK + OVERLAP >= text.length) break;
    }
  }
  return pattern.firstMatch(text);
}

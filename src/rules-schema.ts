/**
 * The rule set file (config/rules.json): the words and patterns of the routing contract. `words` are
 * whole words or phrases, matched by dictionary over the message's tokens. `pattern`s are RE2 syntax and
 * see normalised text (lower case, see normalizeText). `\b` and `\w` are ASCII-only in RE2, so patterns
 * use the Unicode-aware boundaries `{<}` (start of text or a non-word character before) and `{>}`
 * (a non-word character or end of text after) instead.
 */
import { z } from 'zod';
import { CATEGORIES } from './categories.js';
import { ContextCuesSchema } from './context.js';

const ruleId = z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/, 'a rule id is lower-case words joined by dots, e.g. "operation.fix"');

export const RuleSchema = z
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
    /**
     * For a `content` rule: the text handed over begins right after the match, since the words after
     * "git command to" describe the text asked for, and ends at a request to act on it ("…, and run it");
     * without it, the text begins at the next colon, line break or quote. A match naming the user's own
     * things ("the script that …") hands over nothing.
     */
    handsOverAfter: z.literal(true).optional(),
  })
  .strict()
  .refine((rule) => (rule.words === undefined) !== (rule.pattern === undefined), {
    message: 'a rule has either "words" or "pattern", not both and not neither',
  })
  .refine((rule) => rule.requires === undefined || rule.pattern !== undefined, {
    message: '"requires" belongs to pattern rules only',
  })
  .refine((rule) => rule.handsOverAfter === undefined || rule.category === 'content', {
    message: '"handsOverAfter" belongs to content rules only',
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
    /** Cues that tell a follow-up from a turn that stands alone (see context.ts). Without them, context is off. */
    context: ContextCuesSchema.optional(),
    /** Look-alike letter → the Latin letter it imitates; a second letter is an alternate reading (Cyrillic у reads as y or u). */
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

import { z } from 'zod';
import { PROMPT_FILES, STRATEGIES, WrappersSchema, type Wrapper } from '../src/index.js';

/** A value checked only for being a function: what it does when called is the caller's. */
const fn = z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', { error: 'expected a function' });

const nonEmptyText = z.string({ error: 'expected a string' }).refine((text) => text.trim() !== '', { error: 'expected non-empty text' });

/** Every prompt of the set, as loadPrompts() returns it: each a non-empty string. */
const PromptSetSchema = z.looseObject(Object.fromEntries(Object.entries(PROMPT_FILES).map(([role, file]) => [
  role,
  z.string({ error: `expected the ${role} prompt (${file}) as text` }).refine((text) => text.trim() !== '', { error: `expected the ${role} prompt (${file}) as non-empty text` }),
])), {
  error: `expected the prompt set loadPrompts() returns: an object with ${Object.keys(PROMPT_FILES).join(', ')}`,
});

const wholeNumber = z.number({ error: 'expected a number' }).int({ error: 'expected a whole number' }).nonnegative({ error: 'expected 0 or more' });

/** What taskRouter accepts; an unknown option (a typo) is refused too, rather than silently ignored. */
const TaskRouterOptionsSchema = z.strictObject({
  snapshot: fn.optional(),
  classifier: z.custom((value) => typeof value === 'object' && value !== null && typeof (value as { classifyTurns?: unknown }).classifyTurns === 'function', {
    error: 'expected a classifier made by createClassifier()',
  }).optional(),
  prompts: PromptSetSchema.optional(),
  // Each entry is checked by WrappersSchema (checkTaskRouterOptions), as config/wrappers.json is.
  wrappers: z.array(z.unknown(), { error: 'expected an array of wrappers (the shape of config/wrappers.json\'s "wrappers")' }).optional(),
  strategy: z.enum(STRATEGIES, { error: `expected one of ${STRATEGIES.join(', ')}` }).optional(),
  hardRouting: z.boolean({ error: 'expected true or false' }).optional(),
  allowOverride: z.boolean({ error: 'expected true or false' }).optional(),
  overrideToken: nonEmptyText.optional(),
  overridesOpen: z.boolean({ error: 'expected true or false' }).optional(),
  // Loose: one hooks object often serves more than taskRouter (the gateway's carries its upstream and
  // request observers too), so only the four taskRouter calls are checked.
  hooks: z.looseObject({ decision: fn.optional(), skip: fn.optional(), fallback: fn.optional(), override: fn.optional() }, {
    error: 'expected an object of functions (decision, skip, fallback, override)',
  }).optional(),
  sessions: z.custom((value) => typeof value === 'object' && value !== null && typeof (value as { decided?: unknown }).decided === 'function', {
    error: 'expected a SessionTracker',
  }).optional(),
  warn: fn.optional(),
  responseChain: z.union([z.literal(false), z.strictObject({ entries: wholeNumber, characters: wholeNumber })], {
    error: 'expected false or { entries, characters } (whole numbers)',
  }).optional(),
});

/** A value as an error message shows it: text and numbers as written (cut short), other things by kind. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing (it is missing)';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * Checks taskRouter's options once, at construction: a mistake (a strategy misspelled, "false" read from
 * the environment as hardRouting, a prompt set missing a prompt, wrappers that are not a list) would
 * otherwise route every request differently from what was meant, or fail each one. The Error names the
 * option, what was given and what is expected. Returns the wrappers as checked, when they were given.
 */
export function checkTaskRouterOptions(options: unknown): { readonly wrappers: readonly Wrapper[] | undefined } {
  const issues = issuesOf(TaskRouterOptionsSchema.safeParse(options ?? {}), options, 'taskRouter');
  let wrappers: readonly Wrapper[] | undefined;
  const given = (options as { wrappers?: unknown } | undefined)?.wrappers;
  if (Array.isArray(given)) {
    // The entries get config/wrappers.json's own checks, and their messages.
    const checked = WrappersSchema.safeParse({ wrappers: given });
    if (checked.success) wrappers = checked.data.wrappers;
    else issues.push(...issuesOf(checked, { wrappers: given }, 'taskRouter'));
  }
  if (issues.length > 0) throw new Error(`taskRouter: invalid options:\n${issues.map((issue) => `  - ${issue}`).join('\n')}`);
  return { wrappers };
}

/** One line per problem of `root` (the options of `owner`): where, what is expected, and what was given there. */
export function issuesOf(result: z.ZodSafeParseResult<unknown>, root: unknown, owner: string): string[] {
  if (result.success) return [];
  return result.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return `${[...issue.path, ''].join('.')}${issue.keys.join(', ')}: not an option of ${owner} (a misspelling?)`;
    const where = issue.path.map(String).join('.') || 'options';
    return `${where}: ${issue.message}, got ${shown(valueAt(root, issue.path))}`;
  });
}

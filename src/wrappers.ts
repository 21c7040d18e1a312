import { z } from 'zod';
import defaultWrapperData from '../config/wrappers.json' with { type: 'json' };

/**
 * Scaffolding coding agents attach to the user's turn (config/wrappers.json): reminders, environment
 * dumps, slash-command echoes. It is the agent talking, not the human, so it is removed before
 * classification and before anything is previewed in a log.
 */
const agent = z.string().regex(/^[a-z][a-z0-9-]*$/, 'a lower-case agent name such as "claude-code"');

const TagWrapperSchema = z
  .object({
    agent,
    /** The element name: `<tag>…</tag>`, written exactly so (no attributes), is what is matched. */
    tag: z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]*$/, 'an element name of letters, digits, _ . - (no angle brackets)'),
    /** drop: the element and everything in it goes; unwrap: the tags go, what they hold stays. */
    action: z.enum(['drop', 'unwrap']),
  })
  .strict();

const LineWrapperSchema = z
  .object({
    agent,
    /** The name the decision reports when such a line is dropped. */
    line: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'a lower-case name for the line, e.g. "caveat"'),
    /** A line that starts with this text is dropped whole. */
    startsWith: z.string().min(8, 'at least 8 characters, so that no ordinary line starts with it'),
    action: z.literal('drop'),
  })
  .strict();

export const WrappersSchema = z
  .object({
    wrappers: z.array(
      z.union([TagWrapperSchema, LineWrapperSchema], {
        error: 'an entry is {"agent", "tag", "action": "drop" | "unwrap"} or {"agent", "line", "startsWith", "action": "drop"}, with nothing else',
      }),
    ),
  })
  .strict()
  .superRefine((data, context) => {
    const seen = new Set<string>();
    data.wrappers.forEach((wrapper, index) => {
      const name = 'tag' in wrapper ? wrapper.tag : wrapper.line;
      if (seen.has(name)) context.addIssue({ code: 'custom', path: ['wrappers', index], message: `"${name}" is listed twice; keep one entry per tag or line` });
      seen.add(name);
    });
  });

export type WrapperData = z.infer<typeof WrappersSchema>;
export type Wrapper = WrapperData['wrappers'][number];

/** Thrown when a wrapper list does not validate; `issues` names every bad entry. */
export class WrappersError extends Error {
  constructor(readonly issues: readonly string[]) {
    super(`invalid wrapper list:\n${issues.map((issue) => `  - ${issue}`).join('\n')}`);
    this.name = 'WrappersError';
  }
}

/** Validates a wrapper list (the shape of config/wrappers.json). */
export function readWrappers(data: unknown): readonly Wrapper[] {
  const parsed = WrappersSchema.safeParse(data);
  if (!parsed.success) throw new WrappersError(parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`));
  return parsed.data.wrappers;
}

/** The shipped list. */
export const DEFAULT_WRAPPERS: readonly Wrapper[] = readWrappers(defaultWrapperData);

/** The names a list can report as stripped: its tags and line names, the closed set of `stripped`. */
export function wrapperNames(wrappers: readonly Wrapper[]): string[] {
  return wrappers.map((wrapper) => ('tag' in wrapper ? wrapper.tag : wrapper.line));
}

export interface Stripped {
  /** The text with the scaffolding removed and the blank lines it left collapsed. */
  readonly text: string;
  /** What was removed, in the list's order, each name once. */
  readonly stripped: readonly string[];
}

interface TagPlan {
  readonly name: string;
  readonly open: string;
  readonly close: string;
  readonly drop: boolean;
}

interface WrapperPlan {
  readonly tags: readonly TagPlan[];
  readonly lines: readonly { readonly name: string; readonly prefix: string }[];
}

/** Plans by wrapper list: a list is made once per configuration and read for every turn of every request. */
const plans = new WeakMap<readonly Wrapper[], WrapperPlan>();

function planOf(wrappers: readonly Wrapper[]): WrapperPlan {
  const known = plans.get(wrappers);
  if (known) return known;
  const tags: TagPlan[] = [];
  const lines: { name: string; prefix: string }[] = [];
  for (const wrapper of wrappers) {
    if ('tag' in wrapper) tags.push({ name: wrapper.tag, open: `<${wrapper.tag}>`, close: `</${wrapper.tag}>`, drop: wrapper.action === 'drop' });
    else lines.push({ name: wrapper.line, prefix: wrapper.startsWith });
  }
  const plan = { tags, lines };
  plans.set(wrappers, plan);
  return plan;
}

/**
 * Removes agent scaffolding from a human turn. One pass over the text with indexOf, never a regex:
 * at each `<` the configured tags are compared in place. A closing tag is looked for once per opening
 * tag, from where the previous search for that tag ended, and a tag never closed is not looked for
 * again, and the next `<` and newline are searched for only once the scan has passed the last ones
 * found, so the work stays linear in the text whatever it holds. An element without
 * its closing tag (the text may be cut at the scan budget) is left as it is.
 */
export function stripWrappers(text: string, wrappers: readonly Wrapper[]): Stripped {
  if (wrappers.length === 0 || text === '') return { text, stripped: [] };
  const { tags, lines } = planOf(wrappers);
  // Cheap exit for the common case: a message with no wrapper at all is returned as it came.
  const present = (tags.length > 0 && text.includes('<')) || lines.some((line) => text.includes(line.prefix));
  if (!present) return { text, stripped: [] };

  const found = new Set<string>();
  // Per tag: where its closing tag was found last, or -1 once it is known there is none further on. An
  // opening tag before that position (nested in an unwrapped element) reuses it instead of searching.
  const nextClose = new Map<string, number>();
  // Closing tags of unwrapped elements still to be skipped, by position.
  const pendingCloses = new Map<number, number>();
  const out: string[] = [];
  let copyFrom = 0;
  let index = 0;
  const closeAfter = (plan: TagPlan, from: number): number => {
    const known = nextClose.get(plan.name);
    if (known === -1) return -1;
    if (known !== undefined && known >= from) return known;
    const at = text.indexOf(plan.close, from);
    nextClose.set(plan.name, at);
    return at;
  };
  // Where the next `\n` and the next `<` at or after a position are, remembered: the scan only moves
  // forward, so a search is redone only once the scan has passed the place it found. Searching afresh at
  // every stop instead read the rest of the text each time, quadratic on one long line holding many `<`
  // (minified HTML), or on many lines before the first `<`.
  const ahead = (char: string) => {
    let at = -2; // -2: not searched yet; -1: none further on.
    return (from: number): number => {
      if (at !== -1 && at < from) at = text.indexOf(char, from);
      return at;
    };
  };
  const newlineFrom = ahead('\n');
  const ltFrom = ahead('<');
  const cut = (start: number, end: number) => {
    if (start > copyFrom) out.push(text.slice(copyFrom, start));
    copyFrom = end;
  };

  while (index < text.length) {
    const lineStart = index === 0 || text.charCodeAt(index - 1) === 10;
    if (lineStart && lines.length > 0) {
      const line = lines.find((candidate) => text.startsWith(candidate.prefix, index));
      if (line) {
        const newline = newlineFrom(index);
        const end = newline === -1 ? text.length : newline + 1;
        cut(index, end);
        found.add(line.name);
        index = end;
        continue;
      }
    }
    if (text.charCodeAt(index) !== 60 /* < */) {
      const nextLt = ltFrom(index + 1);
      const nextNl = lines.length > 0 ? newlineFrom(index) : -1;
      // Jump to the next place anything can start: a `<`, or the start of a line when lines are configured.
      const candidates = [nextLt, nextNl === -1 ? -1 : nextNl + 1].filter((at) => at > index);
      if (candidates.length === 0) break;
      index = Math.min(...candidates);
      continue;
    }
    const pending = pendingCloses.get(index);
    if (pending !== undefined) {
      pendingCloses.delete(index);
      cut(index, index + pending);
      index += pending;
      continue;
    }
    const plan = tags.find((candidate) => text.startsWith(candidate.open, index));
    if (!plan) {
      index += 1;
      continue;
    }
    const close = closeAfter(plan, index + plan.open.length);
    if (close === -1) {
      index += plan.open.length;
      continue;
    }
    found.add(plan.name);
    if (plan.drop) {
      cut(index, close + plan.close.length);
      index = close + plan.close.length;
    } else {
      cut(index, index + plan.open.length);
      pendingCloses.set(close, plan.close.length);
      index += plan.open.length;
    }
  }
  if (found.size === 0) return { text, stripped: [] };
  if (copyFrom < text.length) out.push(text.slice(copyFrom));
  const cleaned = out.join('').replace(/\n{3,}/g, '\n\n').trim();
  return { text: cleaned, stripped: wrapperNames(wrappers).filter((name) => found.has(name)) };
}

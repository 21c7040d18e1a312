/**
 * Baseline for bench/classify.ts: the behaviour of the naive classifier sketched in the seed spec
 * (task-router-spec.md, "TypeScript Implementation": classifyTask + getConfidence, plus the trivial
 * first-word check of needsSwarm), re-implemented on plain V8 RegExp. No normalisation, no word
 * boundaries, no scan budget: the same unanchored keyword / extension / path alternations the spec uses.
 *
 * The spec's classifyTask also lower-cases the message into a variable it never reads; that dead work is
 * left out here, so this baseline is, if anything, slightly faster than the sketch it stands for.
 */

export type NaiveMode = 'ANSWER' | 'ACTION';
export type NaiveConfidence = 'STRONG' | 'WEAK' | 'NONE';

export interface NaiveDecision {
  readonly mode: NaiveMode;
  readonly confidence: NaiveConfidence;
  /** The first word is one of the trivial commands (the spec's fast path to the tool specialist). */
  readonly trivial: boolean;
}

// A question lead at the very start of the message, any case.
const QUESTION_LEAD = /^(?:what is|explain|how does|why|should i|do you want)/i;

// References to something outside the conversation: links, file extensions, paths, code fences.
const URL_REF = /https?:\/\//;
const EXTENSION_REF = /\.(?:ts|md|js|py|json|yml|yaml|tsx|jsx)/;
const PATH_REF = /src\/|\/|~\/|\.\.\//;
const FENCE_REF = /```/;
const EXTERNAL_REFS: readonly RegExp[] = [URL_REF, EXTENSION_REF, PATH_REF, FENCE_REF];

// Keyword families, matched anywhere (inside longer words too), any case.
const OPERATION_WORDS = /(?:fix|debug|implement|create|update|delete|refactor|test)/i;
const SEARCH_WORDS = /(?:search|find|look for|grep|locate)/i;
const EXECUTION_WORDS = /(?:run|execute|deploy|start|stop|restart)/i;
const MEMORY_WORDS = /(?:remember|save|store|recall|note)/i;
const PROJECT_WORDS_FOR_MODE = /(?:codebase|repo|repository|project|our code)/i;
// The confidence count uses the same families, but its project family has no "our code".
const PROJECT_WORDS_FOR_CONFIDENCE = /(?:codebase|repo|repository|project)/i;

const MODE_TRIGGERS: readonly RegExp[] = [
  ...EXTERNAL_REFS,
  OPERATION_WORDS,
  SEARCH_WORDS,
  EXECUTION_WORDS,
  MEMORY_WORDS,
  PROJECT_WORDS_FOR_MODE,
];

const CONFIDENCE_TRIGGERS: readonly RegExp[] = [
  EXTENSION_REF,
  PATH_REF,
  URL_REF,
  OPERATION_WORDS,
  SEARCH_WORDS,
  EXECUTION_WORDS,
  MEMORY_WORDS,
  PROJECT_WORDS_FOR_CONFIDENCE,
  FENCE_REF,
];

const TRIVIAL_COMMANDS: ReadonlySet<string> = new Set(['pwd', 'date', 'whoami', 'echo', 'ping']);

function anyMatches(patterns: readonly RegExp[], text: string): boolean {
  for (const pattern of patterns) if (pattern.test(text)) return true;
  return false;
}

/** ANSWER when the message opens like a question and names nothing external; else ACTION on any trigger; else ANSWER. */
export function naiveMode(text: string): NaiveMode {
  if (QUESTION_LEAD.test(text) && !anyMatches(EXTERNAL_REFS, text)) return 'ANSWER';
  return anyMatches(MODE_TRIGGERS, text) ? 'ACTION' : 'ANSWER';
}

/** How many trigger families fire: three or more STRONG, one or two WEAK, none NONE. */
export function naiveConfidence(text: string): NaiveConfidence {
  let fired = 0;
  for (const pattern of CONFIDENCE_TRIGGERS) if (pattern.test(text)) fired += 1;
  if (fired >= 3) return 'STRONG';
  return fired >= 1 ? 'WEAK' : 'NONE';
}

/** The first space-separated word of the trimmed message, lower-cased, is a trivial command. */
export function naiveTrivial(text: string): boolean {
  const trimmed = text.trim();
  const space = trimmed.indexOf(' ');
  const first = space === -1 ? trimmed : trimmed.slice(0, space);
  return TRIVIAL_COMMANDS.has(first.toLowerCase());
}

/** One routing decision the naive way: mode, confidence and the trivial flag, all per message. */
export function naiveClassify(text: string): NaiveDecision {
  return { mode: naiveMode(text), confidence: naiveConfidence(text), trivial: naiveTrivial(text) };
}

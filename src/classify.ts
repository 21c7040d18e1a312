import { CATEGORY_ROLES, type Category, type Stakes } from './categories.js';
import type { Confidence, Debate, Decision, Trigger } from './decision.js';
import { maskProductNames } from './names.js';
import { cleanCharacters, cleanText, foldLookalikes, joinCleaned, matchingForm, OTHER_SYMBOL } from './normalize.js';
import type { CompiledRule, CompiledRuleSet } from './ruleset.js';
import { readWindow, type ScanWindow } from './scan.js';
import { hashedFeaturesOf, type MessageFeatures } from './features.js';
import type { Lexicon } from './lexicon.js';
import type { Scorer } from './scorer.js';

const HAS_WORD = /[\p{L}\p{N}]/u;

type RuledDecision = Pick<Decision, 'mode' | 'trivial' | 'confidence' | 'triggers' | 'step' | 'debate'>;

export interface ClassifyOptions {
  /** Most characters of normalised text read per message (head and tail halves); capped by the engine's own limit. */
  readonly scanBudget: number;
  /** Monotonic clock in milliseconds; when given, the decision carries its classification time. */
  readonly now?: () => number;
  /** The second stage; without it the rules alone decide. */
  readonly scorer?: Scorer | null;
  /** Words of other languages the scorer reads as English ones; the scorer's weights were trained with it. */
  readonly lexicon?: Lexicon | null;
}

/** Distinct triggers → confidence: 3 or more STRONG, 1–2 WEAK, none NONE. */
export function confidenceOf(triggerCount: number): Confidence {
  if (triggerCount >= 3) return 'STRONG';
  return triggerCount >= 1 ? 'WEAK' : 'NONE';
}

const NO_DEBATE: Debate = { verdict: 'NONE', stakes: 'none', reasons: [], bypass: null };

const STAKES_ORDER: Readonly<Record<Stakes, number>> = { none: 0, medium: 1, high: 2 };

export interface RuleMatch extends Trigger {
  readonly category: Category;
}

/**
 * The planning-debate verdict for an ACTION: high stakes for destructive, deployment and security
 * wording, medium for bulk scope or vague wording on WEAK evidence; never for read-only work, trivial
 * commands, or when the user has already confirmed.
 */
function planningDebate(triggers: readonly RuleMatch[], evidence: readonly RuleMatch[], signals: readonly RuleMatch[], confidence: Confidence, trivial: boolean): Debate {
  const reasons = [...triggers, ...signals].filter((match) =>
    match.category === 'vague' ? confidence === 'WEAK' : CATEGORY_ROLES[match.category].stakes !== 'none');
  const stakes = reasons.reduce<Stakes>((level, match) => {
    const own = CATEGORY_ROLES[match.category].stakes;
    return STAKES_ORDER[own] > STAKES_ORDER[level] ? own : level;
  }, 'none');
  if (stakes === 'none') return NO_DEBATE;
  const bypass = trivial
    ? 'trivial'
    : signals.some((match) => match.category === 'bypass')
      ? 'confirmed'
      // Read-only is judged on every trigger, merged or not: "improve the build" builds.
      : evidence.every((match) => CATEGORY_ROLES[match.category].readOnly)
        ? 'read_only'
        : null;
  return { verdict: bypass ? 'NONE' : 'DEBATE_PLANNING', stakes, reasons, bypass };
}

/** Whether `outer` covers `inner` as text: the same word or reference seen by two rules. */
function contains(outer: string, inner: string): boolean {
  return outer.length > inner.length ? outer.includes(inner) : outer === inner;
}

/**
 * One piece of evidence counts once: a match inside another match (`codebase` in `the codebase`,
 * `test.ts` in `tests/e2e/test.ts`) is dropped; of equal matches the first rule keeps it.
 */
function distinct(triggers: readonly RuleMatch[]): RuleMatch[] {
  return triggers.filter((trigger, index) => !triggers.some((other, at) =>
    at !== index && (other.match === trigger.match ? at < index : contains(other.match, trigger.match))));
}

/** Whether the first `match` in `text` and the first `phrase` share characters: "please fix" and "fix the grammar". */
function overlaps(text: string, match: string, phrase: string): boolean {
  const at = text.indexOf(match);
  const from = text.indexOf(phrase);
  return at !== -1 && from !== -1 && at < from + phrase.length && from < at + match.length;
}

function occurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + part.length)) count += 1;
  return count;
}

/** How far after an edit phrase the text it hands over may start: "summarize this in two sentences for my boss:". */
const EDIT_INSTRUCTION_TAIL = 60;
/**
 * Where handed-over text starts: a colon, a line break, an opening quote, a dash, arrow or semicolon set
 * off as a separator (in the matching form a dash or quote other than ASCII's is OTHER_SYMBOL).
 */
const HANDED_OVER = new RegExp(`:|\\n|;|(?:^|[\\s(])["'${OTHER_SYMBOL}]|\\s[-${OTHER_SYMBOL}]+>?\\s|=>|->`);
/** A match made of words only; a path, URL, address or file name is something to act on wherever it stands. */
const WORDING = /^[a-z0-9' -]+$/;
/**
 * A describing phrase that names something of the user's ("the script that …", "our workflow for …"),
 * or is followed by one ("a migration for the orders table", "a test for src/app.ts"), is about what
 * exists, not text to write: it describes nothing.
 */
const OWN_WORD = /(?:^|\s)(?:the|my|our|your|this|that|these|those|his|her|their|its)\s/;
const OWN_AFTER_FOR = /^\s*(?:(?:the|my|our|your|this|these|those|his|her|their|its)(?![\p{L}\p{N}])|\S*[/.]\S)/u;

function describesNewText(text: string, phrase: string): boolean {
  if (OWN_WORD.test(phrase)) return false;
  return !phrase.endsWith(' for') || !OWN_AFTER_FOR.test(text.slice(text.indexOf(phrase) + phrase.length));
}

/**
 * Where text a describing phrase hands over ends: at a request to act on what was described, after a
 * sentence end, a comma, "and" or "then" ("…, and run it", ". Then save it as backup.sh").
 */
const DESCRIPTION_END = /(?:[.!?;]\s+|\n\s*|,\s+|\s+(?:and|then)\s+)(?:(?:and|then|now|also|please)\s+)*(?:run|execute|deploy|install|save|commit|apply|fix|restart|delete|remove|test|try|schedule|send|put|add|merge|open|check)\s+(?:it|them|this|that|the|on|in|against|as|into|to|under)(?![\p{L}\p{N}])/u;
/** Categories whose matches in described text are what the text asked for acts on when it runs, not the user's request. */
const DESCRIBED_CATEGORIES: ReadonlySet<Category> = new Set(['file', 'web']);

/** The text a message hands over: from `start` to `end` in the text it was found in. `described`: after a describing phrase. */
interface HandedOver {
  readonly start: number;
  readonly end: number;
  readonly described: boolean;
}

const QUOTE_MARKS = `"'${OTHER_SYMBOL}`;
const SEPARATOR_MARKS = `-:,${OTHER_SYMBOL}`;

/** Whether the text before `at` is one quoted passage, maybe followed by a separator. */
function quotedUpTo(text: string, at: number): boolean {
  let end = at;
  while (end > 0 && (/\s/.test(text[end - 1] as string) || SEPARATOR_MARKS.includes(text[end - 1] as string))) end -= 1;
  let start = 0;
  while (start < end && /\s/.test(text[start] as string)) start += 1;
  return end - start > 2 && QUOTE_MARKS.includes(text[start] as string) && QUOTE_MARKS.includes(text[end - 1] as string);
}

/**
 * The text an edit hands over ("proofread: '…'", "summarize this:\n…"): from the first colon, line break
 * or opening quote shortly after an edit phrase to the end, or from right after one of `describing`,
 * phrases that name the text asked for ("kubectl command to …", "a bash script that …"), to a request
 * of its own to act on it; null when there is none.
 */
function handedOverIn(text: string, edits: readonly string[], describing: readonly string[]): HandedOver | null {
  let found: HandedOver | null = null;
  for (const phrase of edits) {
    const at = text.indexOf(phrase);
    if (at === -1) continue;
    const after = at + phrase.length;
    let span: HandedOver;
    if (describing.includes(phrase)) {
      const end = DESCRIPTION_END.exec(text.slice(after));
      span = { start: after, end: end === null ? text.length : after + end.index, described: true };
    } else {
      const start = HANDED_OVER.exec(text.slice(after, after + EDIT_INSTRUCTION_TAIL));
      const line = text.lastIndexOf('\n', at);
      if (start !== null) span = { start: after + start.index, end: text.length, described: false };
      // The text quoted first, the instruction after it: "'pls send me the deck' – rewrite this so …".
      else if (quotedUpTo(text, at)) span = { start: 0, end: at, described: false };
      // The instruction on a line of its own after the text: "…\n\nproofread this".
      else if (line > 0 && !text.includes('\n', after) && text.slice(0, line).trim() !== '') span = { start: 0, end: line, described: false };
      else continue;
    }
    if (found === null || span.start < found.start) found = span;
  }
  return found;
}

/**
 * Drops the triggers the message itself takes back: a go-ahead held back ("wait, don't do it yet"), an
 * action it says not to take ("plan only, don't change anything"), a verb that edits the message's own
 * text ("fix the grammar: …"), and the words of the text such an edit hands over ("proofread: 'weather
 * permitting, we run at six'"), which are the text's, not requests. Such a verb that also appears
 * elsewhere in the message stays a trigger, and so does a path, URL or name in text handed over for an
 * edit: missing a real request costs more than a needless ACTION. In described text ("a script that
 * deletes /tmp/cache") paths and URLs are what the text asked for will act on, and go too.
 */
function withoutCancelled(found: readonly RuleMatch[], signals: readonly RuleMatch[], edits: readonly string[], handedOver: HandedOver | null, text: string): RuleMatch[] {
  const held = signals.some((signal) => signal.category === 'hold');
  const negated = signals.filter((signal) => signal.category === 'negated').map((signal) => signal.match);
  return found.filter((trigger) => {
    if (held && trigger.category === 'go_ahead') return false;
    if (handedOver !== null && (WORDING.test(trigger.match) || (handedOver.described && DESCRIBED_CATEGORIES.has(trigger.category)))) {
      const at = text.indexOf(trigger.match);
      if (at >= handedOver.start && at < handedOver.end) return false;
    }
    const takenBack = negated.some((phrase) => phrase.endsWith(` ${trigger.match}`))
      || edits.some((phrase) => phrase !== trigger.match && (phrase.includes(trigger.match) || overlaps(text, trigger.match, phrase)));
    return !takenBack || occurrences(text, trigger.match) !== 1;
  });
}

/** What the rules read and found in one message, and what they alone decide. */
export interface RuleReading {
  readonly window: ScanWindow;
  /** The normalised window with look-alikes folded: what the scorer's wording features read. */
  readonly folded: string;
  /** The text an edit hands over ("proofread: '…'") as it stands in `folded`, or null: its words are the text's, not the request's. */
  readonly handedOver: HandedOver | null;
  readonly found: readonly RuleMatch[];
  readonly signals: readonly RuleMatch[];
  /** Triggers the message did not take back. */
  readonly evidence: readonly RuleMatch[];
  readonly triggers: readonly RuleMatch[];
  readonly stakes: readonly RuleMatch[];
  readonly question: boolean;
  readonly external: boolean;
  readonly ruled: RuledDecision;
}

/**
 * The rule stage, in the contract's order: trivial fast path, ANSWER precedence (a question with no
 * external reference), ACTION triggers, default ANSWER.
 */
export function readRules(rules: CompiledRuleSet, text: string, scanBudget: number): RuleReading {
  return recentReading(rules, text, scanBudget)?.reading ?? readRulesAnew(rules, text, scanBudget);
}

/** What classifyText read of a message, and the scorer's features of it when it scored them. */
interface Remembered {
  readonly rules: CompiledRuleSet;
  readonly text: string;
  readonly scanBudget: number;
  readonly reading: RuleReading;
  features: MessageFeatures | null;
}

/**
 * The last messages classifyText read. Routing a conversation classifies its latest turn, the turn
 * before and the assistant's offer, then reads the latest turn again for the context model's
 * features: that second read is found here.
 */
const recent: Remembered[] = [];
const RECENT_READINGS = 4;
/** Longest message remembered so: a conversation's turns are cut to 64 Ki characters (see context.ts). */
const REMEMBERED_TEXT = 64 * 1024;

function recentReading(rules: CompiledRuleSet, text: string, scanBudget: number): Remembered | undefined {
  return recent.find((one) => one.rules === rules && one.scanBudget === scanBudget && one.text === text);
}

function remember(rules: CompiledRuleSet, text: string, scanBudget: number, reading: RuleReading): Remembered | null {
  if (text.length > REMEMBERED_TEXT) return null;
  const one: Remembered = { rules, text, scanBudget, reading, features: null };
  recent.unshift(one);
  if (recent.length > RECENT_READINGS) recent.pop();
  return one;
}

function readRulesAnew(rules: CompiledRuleSet, text: string, scanBudget: number): RuleReading {
  const window = readWindow(text, Math.min(scanBudget, rules.engine.maxInput), cleanCharacters, joinCleaned);
  const cleaned = window.text;
  const folded = foldLookalikes(cleaned, rules.lookalikes);
  const normalized = matchingForm(maskProductNames(folded, rules.names));
  // Letters with two readings (Cyrillic у as y or u): the rules also see the other reading.
  const otherFold = folded === cleaned ? folded : foldLookalikes(cleaned, rules.lookalikes, 1);
  const alternate = otherFold === folded ? normalized : matchingForm(maskProductNames(otherFold, rules.names));
  const readings = alternate === normalized ? 1 : 2;

  const matches = rules.scan(normalized);
  if (readings > 1) for (const [index, match] of rules.scan(alternate, matches)) if (!matches.has(index)) matches.set(index, match);
  const found: RuleMatch[] = [];
  const signals: RuleMatch[] = [];
  const describing: string[] = [];
  // In rule-set order; a message matches a handful of the rules, so only those are looked at.
  for (const index of [...matches.keys()].sort((a, b) => a - b)) {
    const rule = rules.rules[index] as CompiledRule;
    const match = matches.get(index) as string;
    if (rule.handsOverAfter) {
      if (!describesNewText(normalized, match)) continue;
      describing.push(match);
    }
    (CATEGORY_ROLES[rule.category].trigger ? found : signals).push({ rule: rule.id, category: rule.category, match });
  }
  const edits = signals.filter((signal) => signal.category === 'content').map((signal) => signal.match);
  const handedOver = edits.length === 0 ? null : handedOverIn(normalized, edits, describing);
  const evidence = withoutCancelled(found, signals, edits, handedOver, normalized);
  // The words of text handed over for an edit refer to nothing of the user's: only what stays counts.
  const external = (handedOver === null ? found : evidence).some((match) => CATEGORY_ROLES[match.category].external);
  const triggers = distinct(evidence);
  // Vague wording inside a reference is part of a name ("etc" in /etc/hosts), not vagueness.
  const stakes = signals.filter((signal) => signal.category !== 'vague' || !triggers.some((trigger) => contains(trigger.match, signal.match)));

  const commandLine = normalized.startsWith('$ ') ? normalized.slice(2) : normalized;
  const trivialCommand = normalized.length <= 2048
    ? rules.trivial.find(({ command, pattern }) => commandLine.startsWith(command) && pattern.test(normalized))
    : undefined;
  const question = rules.question.test(normalized) && !rules.notQuestion?.test(normalized);

  let ruled: RuledDecision;
  if (trivialCommand) {
    const command: Trigger = { rule: `trivial.${trivialCommand.command}`, category: 'trivial', match: trivialCommand.command };
    // The whole message is the command: the strongest evidence there is.
    ruled = { mode: 'ACTION', trivial: true, confidence: 'STRONG', triggers: [command, ...triggers], step: 'fast_path', debate: planningDebate(triggers, evidence, stakes, 'STRONG', true) };
  } else if (question && !external) {
    ruled = { mode: 'ANSWER', trivial: false, confidence: 'NONE', triggers, step: 'question', debate: { ...NO_DEBATE } };
  } else if (triggers.length > 0) {
    const confidence = confidenceOf(triggers.length);
    ruled = { mode: 'ACTION', trivial: false, confidence, triggers, step: 'triggers', debate: planningDebate(triggers, evidence, stakes, confidence, false) };
  } else {
    ruled = { mode: 'ANSWER', trivial: false, confidence: 'NONE', triggers, step: 'default', debate: { ...NO_DEBATE } };
  }
  // The scorer reads the folded text, which is longer than the matching form where an astral
  // character (an emoji) stands for one placeholder: there the place is looked for again.
  const wording = handedOver === null || folded.length === normalized.length ? handedOver : handedOverIn(folded, edits, describing);
  return { window, folded, found, signals, evidence, triggers, stakes, question, external, handedOver: wording, ruled };
}

/**
 * `text` through cleanText: the window the rules read, when they read all of it lately (context asks
 * right after classifying the turn), else cleaned anew.
 */
export function cleanedText(rules: CompiledRuleSet, text: string, scanBudget: number): string {
  const window = recentReading(rules, text, scanBudget)?.reading.window;
  return window !== undefined && !window.truncated ? window.text : cleanText(text);
}

/** The scorer's features for what the rules read. */
export function scorerFeatures(reading: RuleReading, lexicon: Lexicon | null): MessageFeatures {
  return recent.find((one) => one.reading === reading)?.features ?? featuresOfReading(reading, lexicon);
}

function featuresOfReading(reading: RuleReading, lexicon: Lexicon | null): MessageFeatures {
  const kept = new Set(reading.evidence);
  return hashedFeaturesOf(reading.folded, {
    matched: [...reading.found, ...reading.signals],
    cancelled: reading.found.filter((match) => !kept.has(match)).map((match) => match.category),
    step: reading.ruled.step,
    question: reading.question,
    external: reading.external,
    distinctTriggers: reading.triggers.length,
    handedOver: reading.handedOver,
  }, lexicon);
}

/**
 * A decision with its fields in the order they are always written out. Built in one literal: spreading
 * the rules' decision and the score into a new object cost more than the scorer itself.
 */
function decisionOf(ruled: RuledDecision, overturned: Pick<Decision, 'mode' | 'confidence' | 'step' | 'debate'> | null, score: number, unsure: boolean, scorer: string | null, features: Decision['features'], window: ScanWindow, engine: string): Decision {
  return {
    mode: overturned?.mode ?? ruled.mode,
    trivial: ruled.trivial,
    confidence: overturned?.confidence ?? ruled.confidence,
    triggers: ruled.triggers,
    step: overturned?.step ?? ruled.step,
    debate: overturned?.debate ?? ruled.debate,
    score,
    unsure,
    scorer,
    features,
    scan: { length: window.length, scanned: window.scanned, truncated: window.truncated },
    engine,
  };
}

/**
 * Classifies one message: the rule stage, then the scorer, which may overturn it (step `scorer`).
 * The trivial fast path is never overturned. Pure: same rules, weights and text, same decision.
 */
export function classifyText(rules: CompiledRuleSet, text: string, options: ClassifyOptions): Decision {
  const started = options.now?.();
  const reading = readRulesAnew(rules, text, options.scanBudget);
  const remembered = remember(rules, text, options.scanBudget, reading);
  const { ruled, triggers, evidence, stakes, window } = reading;
  const scorer = options.scorer;
  const engine = rules.engine.name;
  let result: Decision;
  // With no letter, digit or rule match there is nothing to score (an emoji, punctuation, junk): the rules' decision stands.
  if (!scorer || ruled.trivial || !(reading.found.length > 0 || HAS_WORD.test(reading.folded))) {
    result = decisionOf(ruled, null, ruled.mode === 'ACTION' ? 1 : 0, false, scorer?.id ?? null, [], window, engine);
  } else {
    const features = featuresOfReading(reading, options.lexicon ?? null);
    if (remembered !== null) remembered.features = features;
    const { score, top } = scorer.score(features);
    const mode = score >= scorer.threshold ? 'ACTION' : 'ANSWER';
    const unsure = score > scorer.band[0] && score < scorer.band[1];
    let overturned: Pick<Decision, 'mode' | 'confidence' | 'step' | 'debate'> | null = null;
    if (mode !== ruled.mode && mode === 'ACTION') {
      // The scorer's own evidence counts as one piece, so a scored ACTION is never NONE.
      const confidence = confidenceOf(Math.max(1, triggers.length));
      overturned = { mode, confidence, step: 'scorer', debate: planningDebate(triggers, evidence, stakes, confidence, false) };
    } else if (mode !== ruled.mode) {
      overturned = { mode, confidence: 'NONE', step: 'scorer', debate: { ...NO_DEBATE } };
    }
    result = decisionOf(ruled, overturned, score, unsure, scorer.id, [...top], window, engine);
  }
  if (started !== undefined && options.now) result.micros = Math.max(0, (options.now() - started) * 1000);
  return result;
}

/**
 * The classifier: the rule set compiled, the scorer and context weights loaded, once; then one message
 * (or a conversation's latest turn) routed per call.
 */
import defaultRuleSet from '../config/rules.json' with { type: 'json' };
import defaultScorer from '../config/scorer.json' with { type: 'json' };
import defaultContextModel from '../config/context.json' with { type: 'json' };
import defaultLexicon from '../config/lexicon.json' with { type: 'json' };
import { classifyText, cleanedText, readRules, scorerFeatures } from './classify.js';
import { classifyInContext, offerIn, offerTail, type ContextCues, type TurnReader, type Turns } from './context.js';
import type { Decision, Trigger } from './decision.js';
import type { EngineName, RegexEngine } from './engines/engine.js';
import { re2jsEngine } from './engines/re2js.js';
import { re2wasmEngine } from './engines/re2wasm.js';
import type { MessageFeatures } from './features.js';
import { compileLexicon, type Lexicon } from './lexicon.js';
import { compileRuleSet, type CompiledRuleSet } from './ruleset.js';
import { createScorer, featureNames, type Scorer } from './scorer.js';
import { createTextCache } from './text-cache.js';

export const ENGINES: Readonly<Record<EngineName, RegexEngine>> = { re2js: re2jsEngine, 're2-wasm': re2wasmEngine };

/**
 * Default scan budget: 16 Ki UTF-16 units per message, read as 8 Ki at each end. A request sits at the
 * start or the end of a paste; reading more costs about 1 ms per Ki on re2js (see bench/classify.ts).
 */
export const DEFAULT_SCAN_BUDGET = 16 * 1024;

export interface ClassifierOptions {
  /** Rule set data (the shape of config/rules.json); validated and compiled once. Default: the shipped rules. */
  rules?: unknown;
  /** Scorer weights (the shape of config/scorer.json); null: the rules alone decide. Default: the shipped weights. */
  scorer?: unknown;
  /** Context weights (same shape as the scorer's); null: follow-ups route on their own. Default: the shipped weights. */
  context?: unknown;
  /**
   * Words of other languages read as English ones (the shape of config/lexicon.json); null: none.
   * Default: the shipped lexicon, which the shipped weights were trained with.
   */
  lexicon?: unknown;
  /** Regex engine; default `re2js`. */
  engine?: EngineName | RegexEngine;
  /** Most characters read per message; default DEFAULT_SCAN_BUDGET. */
  scanBudget?: number;
  /** Monotonic clock in milliseconds (e.g. `performance.now`); when given, decisions carry `micros`. */
  now?: () => number;
  /**
   * Messages whose decision and features are remembered, least recently used first out; default
   * DEFAULT_CACHE_ENTRIES, 0 remembers none. Only messages up to CACHE_TEXT_LENGTH characters are kept.
   */
  cacheEntries?: number;
}

export const DEFAULT_CACHE_ENTRIES = 512;
/** Longest message remembered: bounds the cache's memory to about entries × 8 KB for each of its two maps. */
export const CACHE_TEXT_LENGTH = 4096;

export interface Classifier {
  /** Routes one message on its own. The decision is the caller's own: nothing in it is shared with another call. */
  classify(text: string): Decision;
  /** Routes the latest human turn in the light of the conversation (step `context` when it is a follow-up). */
  classifyTurns(turns: Turns): Decision;
  /** The names of the scorer's features of a message (what explanations show). */
  features(text: string): string[];
  /** The scorer's features of a message as it reads them (what training reads). */
  hashedFeatures(text: string): MessageFeatures;
  /** A message through cleanText: the rules' window when they last read all of it, else cleaned anew. */
  cleaned(text: string): string;
  readonly ruleIds: readonly string[];
  readonly engine: EngineName;
  /** Id of the scorer weights; null when the rules alone decide. */
  readonly scorerId: string | null;
}

const copyOfTrigger = (trigger: Trigger): Trigger => ({ ...trigger });

/**
 * A decision with none of its objects shared: the cache keeps the original and every caller gets its
 * own, so a caller that edits what it got (an override, trigger text redacted before logging) cannot
 * change what later callers are given for the same text. Copying (about 0.4 µs a decision) was measured
 * against freezing the cached decision deeply (2.5 to 10 µs, Object.freeze changes every object's
 * shape), which only pays when a text is seen more than several times over.
 */
function copyOf(decision: Decision): Decision {
  return {
    ...decision,
    triggers: decision.triggers.map(copyOfTrigger),
    debate: { ...decision.debate, reasons: decision.debate.reasons.map(copyOfTrigger) },
    scan: { ...decision.scan },
    features: decision.features.map((feature) => ({ ...feature })),
  };
}

/**
 * Compiles the rules and loads the scorer once, and returns a classifier. Throws RuleSetError naming
 * every invalid rule, or ScorerError saying what is wrong with the weights.
 */
export function createClassifier(options: ClassifierOptions = {}): Classifier {
  const engine = typeof options.engine === 'object' ? options.engine : ENGINES[options.engine ?? 're2js'];
  if (!engine) throw new Error(`unknown regex engine "${String(options.engine)}": use one of ${Object.keys(ENGINES).join(', ')}`);
  const scanBudget = options.scanBudget ?? DEFAULT_SCAN_BUDGET;
  if (!Number.isInteger(scanBudget) || scanBudget < 256) throw new Error(`scanBudget must be a whole number of at least 256 characters, got ${scanBudget}`);
  const compiled: CompiledRuleSet = compileRuleSet(options.rules === undefined ? defaultRuleSet : options.rules, engine);
  const scorer: Scorer | null = options.scorer === null ? null : createScorer(options.scorer ?? defaultScorer);
  const lexicon: Lexicon | null = options.lexicon === null ? null : compileLexicon(options.lexicon ?? defaultLexicon);
  const classifyOptions = { scanBudget, scorer, lexicon, ...(options.now ? { now: options.now } : {}) };
  const cacheEntries = options.cacheEntries ?? DEFAULT_CACHE_ENTRIES;
  if (!Number.isInteger(cacheEntries) || cacheEntries < 0) throw new Error(`cacheEntries must be a whole number of 0 or more, got ${cacheEntries}`);
  // A decision kept with the scorer's features of its text, made when context first asks for them.
  const known = createTextCache<{ readonly decision: Decision; features: MessageFeatures | null }>(cacheEntries, CACHE_TEXT_LENGTH);
  const now = options.now;
  const classify = (text: string): Decision => {
    const started = now?.();
    const entry = known.get(text);
    if (entry === undefined) {
      const decision = classifyText(compiled, text, classifyOptions);
      known.set(text, { decision, features: null });
      return copyOf(decision);
    }
    // The same text decides the same way: only the time taken is this call's own.
    const decision = copyOf(entry.decision);
    if (started !== undefined && now !== undefined) decision.micros = Math.max(0, (now() - started) * 1000);
    return decision;
  };
  const hashedFeatures = (text: string): MessageFeatures => {
    const entry = known.get(text);
    if (entry?.features) return entry.features;
    const features = scorerFeatures(readRules(compiled, text, scanBudget), lexicon);
    if (entry !== undefined) entry.features = features;
    return features;
  };
  const cues = compiled.context;
  const contextModel: Scorer | null = options.context === null || cues === null ? null : createScorer(options.context ?? defaultContextModel);
  // An agent loop resends the assistant turn before its latest human turn on every round trip.
  const offers = createTextCache<string | null>(cacheEntries, CACHE_TEXT_LENGTH);
  const offerOf = (assistant: string, within: ContextCues): string | null => {
    const tail = offerTail(assistant);
    const known = offers.get(tail);
    if (known !== undefined) return known;
    const offer = offerIn(tail, within);
    offers.set(tail, offer);
    return offer;
  };
  const cleaned = (text: string): string => cleanedText(compiled, text, scanBudget);
  const reader: TurnReader = { classify, features: hashedFeatures, cleaned, offer: offerOf };
  return {
    classify,
    classifyTurns: (turns) => (contextModel === null || cues === null ? classify(turns.latest) : classifyInContext(turns, cues, contextModel, reader)),
    features: (text) => featureNames(hashedFeatures(text)),
    hashedFeatures,
    cleaned,
    ruleIds: compiled.rules.map((rule) => rule.id),
    engine: engine.name,
    scorerId: scorer?.id ?? null,
  };
}

export { defaultContextModel, defaultLexicon, defaultRuleSet, defaultScorer };

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
import { ENGINE_NAMES, type EngineName, type RegexEngine } from './engines/engine.js';
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
  /**
   * Routes the latest human turn in the light of the conversation (step `context` when it is a
   * follow-up). A turn left out (`previous`, `assistant`) is read as none, like null.
   */
  classifyTurns(turns: TurnsGiven): Decision;
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

/** The turns classifyTurns takes: the latest human turn, and the two before it when there are any. */
export interface TurnsGiven {
  readonly latest: string;
  readonly previous?: string | null | undefined;
  readonly assistant?: string | null | undefined;
}

/** A value as an error message shows it: its kind, and a short look at it. */
function described(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return `an object with keys ${JSON.stringify(Object.keys(value).slice(0, 6))}`;
  if (typeof value === 'function') return 'a function';
  const shown = String(value);
  return `${typeof value} ${shown.length > 40 ? `${shown.slice(0, 40)}…` : shown}`;
}

/**
 * The text given to classify, checked: called from JavaScript with a request object or nothing, the
 * classifier would read it as an empty message and answer ANSWER, or fail deep inside with a message
 * about `length`.
 */
function textOf(value: unknown, where: string): string {
  if (typeof value === 'string') return value;
  throw new TypeError(`${where} expects the message's text as a string, got ${described(value)}: pass the text itself (of a chat body, its latest user turn)`);
}

function turnsOf(given: unknown): Turns {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new TypeError(`classifyTurns(turns) expects an object { latest, previous?, assistant? } of strings, got ${described(given)}`);
  }
  const { latest, previous, assistant } = given as Record<string, unknown>;
  const other = (value: unknown, name: string): string | null => {
    if (value === undefined || value === null) return null;
    if (typeof value === 'string') return value;
    throw new TypeError(`classifyTurns(turns): turns.${name} is the ${name === 'previous' ? 'human turn before the latest' : "assistant's last turn"} as a string, or null when there is none; got ${described(value)}`);
  };
  return { latest: textOf(latest, 'classifyTurns(turns): turns.latest'), previous: other(previous, 'previous'), assistant: other(assistant, 'assistant') };
}

/** The engine the option names; an unknown name or an object that is not an engine is refused here, where it is clear. */
function engineOf(option: unknown): RegexEngine {
  if (option === undefined) return ENGINES.re2js;
  if (typeof option === 'string' && Object.hasOwn(ENGINES, option)) return ENGINES[option as EngineName];
  if (typeof option === 'object' && option !== null) {
    const candidate = option as Partial<Record<keyof RegexEngine, unknown>>;
    const named = typeof candidate.name === 'string' && (ENGINE_NAMES as readonly string[]).includes(candidate.name);
    if (named && typeof candidate.compile === 'function' && typeof candidate.maxInput === 'number') return option as RegexEngine;
  }
  const given = typeof option === 'string' ? JSON.stringify(option) : `(${described(option)}, not an engine with name, maxInput and compile())`;
  throw new Error(`unknown regex engine ${given}: use one of ${Object.keys(ENGINES).join(', ')}`);
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
  const engine = engineOf(options.engine);
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
    textOf(text, 'classify(text)');
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
    classifyTurns: (given) => {
      const turns = turnsOf(given);
      return contextModel === null || cues === null ? classify(turns.latest) : classifyInContext(turns, cues, contextModel, reader);
    },
    features: (text) => featureNames(hashedFeatures(text)),
    hashedFeatures,
    cleaned,
    ruleIds: compiled.rules.map((rule) => rule.id),
    engine: engine.name,
    scorerId: scorer?.id ?? null,
  };
}

export { defaultContextModel, defaultLexicon, defaultRuleSet, defaultScorer };

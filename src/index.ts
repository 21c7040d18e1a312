/**
 * task-router's pure core: deterministic ANSWER / ACTION routing of one message, with no I/O.
 */
import defaultRuleSet from '../config/rules.json' with { type: 'json' };
import { classifyText } from './classify.js';
import type { Decision } from './decision.js';
import type { EngineName, RegexEngine } from './engines/engine.js';
import { re2jsEngine } from './engines/re2js.js';
import { re2wasmEngine } from './engines/re2wasm.js';
import { compileRuleSet, type CompiledRuleSet } from './ruleset.js';

export const ENGINES: Readonly<Record<EngineName, RegexEngine>> = { re2js: re2jsEngine, 're2-wasm': re2wasmEngine };

/**
 * Default scan budget: 16 Ki UTF-16 units per message, read as 8 Ki at each end. A request sits at the
 * start or the end of a paste; reading more costs about 1 ms per Ki on re2js (see bench/classify.ts).
 */
export const DEFAULT_SCAN_BUDGET = 16 * 1024;

export interface ClassifierOptions {
  /** Rule set data (the shape of config/rules.json); validated and compiled once. Default: the shipped rules. */
  rules?: unknown;
  /** Regex engine; default `re2js`. */
  engine?: EngineName | RegexEngine;
  /** Most characters read per message; default DEFAULT_SCAN_BUDGET. */
  scanBudget?: number;
  /** Monotonic clock in milliseconds (e.g. `performance.now`); when given, decisions carry `micros`. */
  now?: () => number;
}

export interface Classifier {
  classify(text: string): Decision;
  readonly ruleIds: readonly string[];
  readonly engine: EngineName;
}

/** Compiles the rules once and returns a classifier. Throws RuleSetError naming every invalid rule. */
export function createClassifier(options: ClassifierOptions = {}): Classifier {
  const engine = typeof options.engine === 'object' ? options.engine : ENGINES[options.engine ?? 're2js'];
  if (!engine) throw new Error(`unknown regex engine "${String(options.engine)}": use one of ${Object.keys(ENGINES).join(', ')}`);
  const scanBudget = options.scanBudget ?? DEFAULT_SCAN_BUDGET;
  if (!Number.isInteger(scanBudget) || scanBudget < 256) throw new Error(`scanBudget must be a whole number of at least 256 characters, got ${scanBudget}`);
  const compiled: CompiledRuleSet = compileRuleSet(options.rules === undefined ? defaultRuleSet : options.rules, engine);
  const classifyOptions = options.now ? { scanBudget, now: options.now } : { scanBudget };
  return {
    classify: (text) => classifyText(compiled, text, classifyOptions),
    ruleIds: compiled.rules.map((rule) => rule.id),
    engine: engine.name,
  };
}

export { defaultRuleSet };
export { classifyText, confidenceOf } from './classify.js';
export { CATEGORIES, CATEGORY_ROLES, type Category, type Stakes } from './categories.js';
export { DecisionSchema, TriggerSchema, MODES, CONFIDENCES, STEPS, type Confidence, type Debate, type Decision, type Mode, type Step, type Trigger } from './decision.js';
export type { CompiledPattern, EngineName, RegexEngine } from './engines/engine.js';
export { normalizeText } from './normalize.js';
export { compileRuleSet, RuleSetError, RuleSetSchema, type CompiledRuleSet, type RuleSetData } from './ruleset.js';
export { tokenize } from './phrases.js';
export { CorpusLineSchema, evaluate, GATES, type CorpusLine, type EvalReport, type Miss } from './evaluate.js';
export { applyOverride, assemblePrompt, ownPrompts, PROMPT_FILES, routeOf, type PromptSet, type Route } from './route.js';
export { CHAT_FORMATS, FORMATS, formatForPath, STRATEGIES, type ChatFormat, type FormatName, type JsonObject, type Strategy } from './formats/index.js';
export { previewOf, redactSecrets } from './redact.js';
export { DecisionRecordSchema, memoryEntry, type DecisionRecord } from './records.js';
export {
  debatable, emptySession, errorSignature, FAILURE_TRIGGERS, FAILURE_VERDICTS, MAX_ERROR_SIGNATURES, normalizeError, OUTCOMES, recordDecision, recordOutcome, resolveTask, takePending, taskKeyOf,
  type FailureTrigger, type FailureVerdict, type Outcome, type OutcomeReport, type OutcomeResult, type PendingDebate, type SessionLimits, type SessionState, type TaskSeen, type TaskState,
} from './failure-debate.js';
